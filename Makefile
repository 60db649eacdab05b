# Two entry points for a fresh machine (Python >= 3.10, pip, make):
#   make run   -- venv + install + the main job (K-means on generated data)
#   make test  -- venv + install + the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,peers,ray]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/strataflow run kmeans

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py

clean:
	rm -rf $(VENV) build *.egg-info
