"""Launching: the plan of a command (jobs and prerequisites), sweeps, SLURM, runs that figures need."""
