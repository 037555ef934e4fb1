# twokeys: `make demo` (set up + index the example KB + compare search modes), `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.twokeys-installed
RUNTIME_STAMP := $(VENV)/.twokeys-runtime
DEMO_INDEX ?= .demo/support-kb.twokeys

.PHONY: venv runtime demo test test-full lint typecheck unit fuzz clean

venv: $(STAMP)

# `make demo` needs the runtime only (and the pdf extra): no torch, no test or benchmark extras
runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml setup.py src/twokeys/lexical/_kernel.c src/twokeys/text/_kernel.c
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "twokeys needs Python 3.11+"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[pdf]'
	touch $(RUNTIME_STAMP)

$(STAMP): pyproject.toml setup.py src/twokeys/lexical/_kernel.c src/twokeys/text/_kernel.c
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "twokeys needs Python 3.11+"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(RUNTIME_STAMP)

demo: runtime
	$(BIN)/twokeys index examples/support-kb/docs --index $(DEMO_INDEX)
	$(BIN)/twokeys info --index $(DEMO_INDEX)
	@for mode in bm25 dense hybrid; do \
		echo; echo "=== $$mode: What does error code ZX-4821 mean?"; \
		$(BIN)/twokeys search "What does error code ZX-4821 mean?" --index $(DEMO_INDEX) --mode $$mode -k 3; \
	done
	@for mode in bm25 dense hybrid; do \
		echo; echo "=== $$mode: Can I get my money back if the item arrived broken?"; \
		$(BIN)/twokeys search "Can I get my money back if the item arrived broken?" --index $(DEMO_INDEX) --mode $$mode -k 3; \
	done
	@echo; echo "=== hybrid --explain: why was nomic-embed-text chosen?"
	$(BIN)/twokeys search "why was nomic-embed-text chosen?" --index $(DEMO_INDEX) -k 2 --explain
	@echo
	$(BIN)/python examples/compare_modes.py --index $(DEMO_INDEX)
	@echo; echo "=== a PDF, cited to its page: examples/manuals/octave-refcard.pdf"
	$(BIN)/twokeys index examples/manuals --index .demo/manuals.twokeys
	$(BIN)/twokeys search "solve nonlinear algebraic equations" --index .demo/manuals.twokeys --mode bm25 -k 2

lint: venv
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest -m "not slow" -q

test: lint typecheck
	$(BIN)/pytest -q

test-full: lint typecheck
	$(BIN)/pytest -q -m ""

# Property tests of the analyzer, Boolean parser, fusion, chunker and packer at 10,000 cases
# each (the normal suite runs 40); hypothesis prints each property's case count.
fuzz: venv
	TWOKEYS_HYPOTHESIS=fuzz nice -n 10 $(BIN)/pytest tests/unit/test_properties.py -q -p no:cacheprovider --hypothesis-show-statistics

clean:
	rm -rf .demo .pytest_cache .mypy_cache .ruff_cache

# Benchmarks against peer libraries (benchmarks/README.md). Peers live in their own venv,
# never in the package's; torch 2.13.0 (a local CPU wheel) goes in first so nothing pulls
# a CUDA build. `make bench BENCH=bm25` runs one part (bm25, embedding, vectors, scale).
BENCH_VENV := benchmarks/.venv
BENCH_STAMP := $(BENCH_VENV)/.bench-installed
BENCH ?= all

.PHONY: bench

$(BENCH_STAMP): pyproject.toml setup.py src/twokeys/lexical/_kernel.c src/twokeys/text/_kernel.c benchmarks/requirements.txt benchmarks/requirements-nodeps.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "twokeys needs Python 3.11+"'
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(BENCH_VENV)/bin/python -m pip install --quiet -e . -r benchmarks/requirements.txt
	$(BENCH_VENV)/bin/python -m pip install --quiet --no-deps -r benchmarks/requirements-nodeps.txt
	touch $@

bench: $(BENCH_STAMP)
	nice -n 10 $(BENCH_VENV)/bin/python -m benchmarks $(BENCH)
