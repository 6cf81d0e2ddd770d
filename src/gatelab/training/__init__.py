"""Training: the one loop, stacked nets, table rows, metrics, a run's results and checkpoints."""
