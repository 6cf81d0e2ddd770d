"""Data: the MNIST / CIFAR-10 caches on the device, paper 003's routing tasks, the frozen ResNet-20
feature extractor. Imports :mod:`gatelab.core` only."""
