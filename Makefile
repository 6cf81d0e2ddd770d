# gatelab Make targets. DATA defaults to $GATELAB_DATA (or ../shared/data when that exists).
PYTHON ?= python
DATA ?= $(or $(GATELAB_DATA),$(wildcard ../shared/data))
DATA_ARG = $(if $(DATA),data.root=$(abspath $(DATA)),)

.PHONY: install test run help

help:
	@echo "make install   pip install -e .[dev]"
	@echo "make test      the test suite (CPU, a few minutes)"
	@echo "make run       python run.py (MNIST / FC / ReLU / Adam, 10 epochs)"

install:
	$(PYTHON) -m pip install -e ".[dev]"

test:
	$(PYTHON) -m pytest -q tests

run:
	$(PYTHON) run.py $(DATA_ARG)
