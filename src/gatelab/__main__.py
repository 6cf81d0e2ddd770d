"""The ``gatelab`` command (``python -m gatelab``): ``gatelab run ARGS`` trains as ``python run.py ARGS`` does
(:mod:`gatelab.run`); ``gatelab reproduce <recipe> ...`` / ``gatelab recipes`` / ``gatelab costs``: see
:mod:`gatelab.papers.reproduce`; ``gatelab page [--check]``: the page of what reproduces (:mod:`gatelab.papers.page`); ``gatelab confirm``: the
confirmation runs (:mod:`gatelab.papers.confirm`)."""
import sys

from gatelab.core import early_stop


def cli() -> None:
    installed = early_stop.install()
    command, rest = sys.argv[1:2], sys.argv[2:]
    if command == ["run"]:
        from gatelab.run import entry
        early_stop.release(installed)
        entry(rest)
        return
    if command == ["page"]:
        from gatelab.papers.page import main as page
        early_stop.release(installed)
        sys.exit(page(rest))
    if command == ["confirm"]:
        from gatelab.papers.confirm import main as confirm
        early_stop.release(installed)
        sys.exit(confirm(rest))
    from gatelab.papers.reproduce import main
    early_stop.release(installed)
    sys.exit(main())


if __name__ == "__main__":
    cli()
