# planfold — every target builds its own virtual environment when it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck unit demo bench fuzz mutation diagrams clean

# The environment has the dev and bench extras: the benchmark smoke tests run
# against the baselines the bench extra installs (eventsourcing, LangGraph).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check kernel adapters tests

typecheck: $(STAMP)
	$(BIN)/mypy --strict -p planfold -p tests -p benchmarks

unit: $(STAMP)
	$(BIN)/python -m pytest

## The one test command: lint, types, then every test.
test: lint typecheck unit

## The main job: a whole session on the embedded defaults.
demo: $(STAMP)
	$(BIN)/planfold demo --db demo.sqlite

## Regenerate specs/: state diagrams, the event schema, conformance vectors, README diagrams.
diagrams: $(STAMP)
	$(BIN)/python -m planfold.adapters.specgen.diagrams specs
	$(BIN)/python -m planfold.adapters.specgen.errors_table specs

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
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis demo.sqlite*
