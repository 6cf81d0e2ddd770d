"""gatelab: reproduce the experiments of papers on gating in deep ReLU networks."""
__version__ = "0.1.0"
