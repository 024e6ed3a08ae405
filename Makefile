# planfold — every target builds its own virtual environment when it is missing.
# PYTHON names the interpreter; each one gets its own environment: .venv for
# the default python3, .venv-3.13 for `make test PYTHON=python3.13`.
PYTHON ?= python3
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifeq ($(origin PYTHON),default)
VENV   := .venv
else ifeq ($(origin PYTHON),file)
VENV   := .venv
else
VENV   := .venv-$(PYTHON_VERSION)
endif
ifeq ($(PYTHON_VERSION),)
$(error PYTHON=$(PYTHON) does not run here: name a working interpreter, e.g. PYTHON=$$(pyenv prefix 3.13)/bin/python3.13)
endif
BIN    := $(VENV)/bin
# One environment, filled as far as each target needs: the runtime alone
# (make demo), with the dev extra (make test), with the bench extra too
# (make bench). Each stamp is a file touched when its install succeeded.
RUNTIME := $(VENV)/.runtime
STAMP   := $(VENV)/.installed
BENCH   := $(VENV)/.bench
# The npm packages of examples/ (TypeScript, json-schema-to-typescript), as
# package-lock.json pins them: make diagrams generates the TypeScript types.
NODE_PACKAGES := examples/node_modules/.installed

.PHONY: test lint typecheck unit demo bench fuzz mutation diagrams clean

$(RUNTIME): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

# The tests that compare the benchmarks' baselines with the kernel run them
# when the bench extra is installed too (CI installs it: .ci/run).
$(STAMP): $(RUNTIME)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BENCH): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH)

$(NODE_PACKAGES): examples/package.json examples/package-lock.json
	cd examples && npm ci --silent --no-audit --no-fund
	touch $(NODE_PACKAGES)

lint: $(STAMP)
	$(BIN)/ruff check kernel adapters tests

typecheck: $(STAMP)
	$(BIN)/mypy --strict -p planfold -p tests -p benchmarks

unit: $(STAMP)
	$(BIN)/python -m pytest

## The one test command: lint, types, then every test.
test: lint typecheck unit

## The main job: a whole session on the embedded defaults.
demo: $(RUNTIME)
	$(BIN)/planfold demo --db demo.sqlite

## Regenerate specs/: state diagrams, the event schema, conformance vectors, the diagrams of
## docs/how-it-works.md; the report's diagrams, laid out by Graphviz with stable ids
## (adapters/report/diagrams/); the TypeScript types of planfold serve (examples/planfold-rpc.d.ts,
## needs Node); and docs/report.png, the picture of the demo's report (needs Chromium).
diagrams: $(STAMP) $(NODE_PACKAGES)
	$(BIN)/python -m planfold.adapters.specgen.diagrams specs
	$(BIN)/python -m planfold.adapters.specgen.diagrams --report-diagrams adapters/report/diagrams
	$(BIN)/python -m planfold.adapters.specgen.errors_table specs
	$(BIN)/python -m planfold.adapters.specgen.vectors write adapters/specgen/conformance
	cd examples && node generate-types.mjs
	$(BIN)/python -m tests.adapters.report.browser docs/report.png

## Fuzz the entry points and run the state machines under the fuzz profile for
## FUZZ_SECONDS; new failing inputs are written to tests/fuzz/corpus/.
FUZZ_SECONDS ?= 600
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m tests.fuzz --seconds $(FUZZ_SECONDS)

## Mutation testing of kernel/ with mutmut; prints killed / non-equivalent mutants.
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mutation]'
	$(BIN)/python -m tests.mutation run

## Benchmarks, not part of `make test`: every cost goal as a ratio measured in the
## same run, with its spread, at histories of 1k, 100k and 1M events (about 10
## minutes on two cores); fails when a goal is missed. BENCH_SCALE=0.1 for a quick look
## (the goals shown, not judged: they are stated for the default scale).
bench: $(BENCH)
	$(BIN)/python -m benchmarks

clean:
	rm -rf .venv .venv-* .mypy_cache .ruff_cache .pytest_cache .hypothesis demo.sqlite* examples/node_modules examples/build
