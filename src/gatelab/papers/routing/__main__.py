"""``python -m gatelab.papers.routing``: the paper's command line."""
from gatelab.papers.routing import main

main()
