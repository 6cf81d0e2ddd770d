"""``python -m gatelab reproduce <recipe> ...`` / ``python -m gatelab recipes``: see :mod:`gatelab.papers.reproduce`."""
import sys

from gatelab.papers.reproduce import main

sys.exit(main())
