"""Analyses of networks: NPK/NTK kernels and nu (papers 001, 002), neuron clusters and alignment,
iterative magnitude pruning (paper 004)."""
