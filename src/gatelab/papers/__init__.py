"""One module per paper: its published numbers, its tables and its figures.

* :mod:`gatelab.papers.npf`: paper 001, Neural Path Features and Neural Path Kernel (Table 2, Figure 3)
* :mod:`gatelab.papers.dgn`: paper 002, Deep Gated Networks (Table 4, Figures 1-4, 7, 8)

``python -m gatelab.papers.<paper> <table|figure> ...``. Tables read runs only
(:mod:`gatelab.papers.report`); figures train what they need through :mod:`gatelab.launch.runner`.
"""
