"""The configs (Hydra reads them as the package gatelab.conf: ``@hydra.main(config_path="conf")`` in gatelab.run)."""
