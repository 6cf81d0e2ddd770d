"""``python -m gatelab.papers.races``: the paper's command line."""
from gatelab.papers.races import main

main()
