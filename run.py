"""gatelab entry point in a checkout: ``python run.py [dataset=..] [arch=..] [regime=..] [key=value ..]``, the same
as ``gatelab run ...`` of an installed gatelab (:mod:`gatelab.run`). See README.md."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # this checkout's gatelab, whatever is installed
from gatelab.run import entry  # noqa: E402

if __name__ == "__main__":
    entry(sys.argv[1:])
