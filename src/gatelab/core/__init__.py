"""Configuration and run bookkeeping: typed config schemas and checks, run keys and directories,
the results.json contract, checkpoint files. The lowest layer: it imports no other gatelab package."""
