# Two entry points for a fresh machine (Python >= 3.10, pip, make):
#   make run   -- venv + install + the main job (K-means on generated data)
#   make test  -- venv + install + the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed-test
RUNSTAMP = $(VENV)/.installed-run

.PHONY: run test test-long bench differential clean

# make run installs only what the main job needs; make test adds the test tools, the
# plots, and the heavy extras the suite covers (PySpark for the peer, Ray for clusters,
# sqlglot and DuckDB for DataFrames)
$(RUNSTAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUNSTAMP)

$(STAMP): $(RUNSTAMP)
	$(BIN)/pip install --quiet -e '.[dev,peers,ray,plots,sql]'
	touch $(STAMP)

run: $(RUNSTAMP)
	$(BIN)/strataflow run kmeans

# two workers, a test file each at a time (a file's module fixtures are set up once; one
# Ray at a time: tests/test_ray_backend.py's private_ray): the suite's tests wait on
# subprocesses and disks as much as they compute, so two workers on two cores take two
# thirds of the time one does (733 s -> 488 s)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=20

# the long tier (CONTRIBUTING.md): the tests marked long (soaks, the full matrices), the
# differential tester's long mode, and the memory ceiling measured in resident memory on
# both backends (make test checks it in allocated bytes)
test-long: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m long --durations=20
	$(MAKE) differential PROGRAMS=2000
	$(BIN)/python benchmarks/memory_bound.py --size 48MB --memory 16MB --iterations 2 --apis records,batches \
		--levels MEMORY_AND_DISK --backends threads,processes --out /tmp/strataflow-memory-bound

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py

# the differential tester's long mode (make test runs a bounded number): random programs on
# every local backend against the model; PROGRAMS=20000 SEED=7 BACKENDS=threads,processes,ray
PROGRAMS ?= 2000
SEED ?= 1
BACKENDS ?= threads,processes
differential: $(STAMP)
	$(BIN)/python benchmarks/differential.py --programs $(PROGRAMS) --seed $(SEED) --backends $(BACKENDS)

clean:
	rm -rf $(VENV) build *.egg-info
