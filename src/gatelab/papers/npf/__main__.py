"""``python -m gatelab.papers.npf``: the paper's command line."""
from gatelab.papers.npf import main

main()
