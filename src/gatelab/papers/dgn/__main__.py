"""``python -m gatelab.papers.dgn``: the paper's command line."""
from gatelab.papers.dgn import main

main()
