"""``python -m gatelab reproduce <recipe> ...`` / ``python -m gatelab recipes``: see :mod:`gatelab.papers.reproduce`;
``python -m gatelab page [--check]``: the page of what reproduces, see :mod:`gatelab.papers.page`."""
import sys

from gatelab.core import early_stop

_EARLY = early_stop.install()
if sys.argv[1:2] == ["page"]:
    from gatelab.papers.page import main as page
    early_stop.release(_EARLY)
    sys.exit(page(sys.argv[2:]))

from gatelab.papers.reproduce import main  # noqa: E402

early_stop.release(_EARLY)
sys.exit(main())
