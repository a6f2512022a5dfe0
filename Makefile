# xlat: `make demo` sets everything up and runs the main job; `make test` runs every check.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PYDIRS := python tests $(wildcard benches)
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup demo test lint test-rust test-python bench wheel clean

# Each step of `make test` prints its wall time at its end (CI's log shows where the time goes).
STEP_START = @mkdir -p out && date +%s > out/.step-$@
STEP_END = @echo "make $@: $$(( $$(date +%s) - $$(cat out/.step-$@) )) s"

setup:
	$(STEP_START)
	@scripts/setup.sh
	$(STEP_END)

demo: setup
	$(VENV)/bin/xlat demo

lint: setup
	$(STEP_START)
	python3 scripts/check-cycles.py
	cargo fmt --all -- --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check $(PYDIRS)
	$(VENV)/bin/ruff format --check $(PYDIRS)
	$(STEP_END)

# MAKEFLAGS cleared: under `make test` (-j2) Cargo would look for make's jobserver, whose
# descriptors a recipe is not given, and warn.
test-rust: setup
	$(STEP_START)
	MAKEFLAGS= cargo test --release --workspace
	$(STEP_END)

test-python: setup
	$(STEP_START)
	$(PY) -m pytest --durations=15 tests; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc
	$(STEP_END)

# The Rust tests (mostly compiling) and the Python tests (mostly single-threaded processes) run
# side by side on the two cores; each one's output is printed when it ends (--output-sync).
test: lint
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-rust test-python

# A wheel of xlat in dist/, to install anywhere with pip (docs/install.md). It is built in the
# profile of the checkout's extension (XLAT_PROFILE, default dist), so Cargo reuses that build.
wheel: setup
	$(STEP_START)
	@rm -f dist/xlat-*.whl
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VENV)/bin/maturin build --profile $${XLAT_PROFILE:-dist} --interpreter $(PY) --out dist
	@ls -l dist/xlat-*.whl
	$(STEP_END)

# Real traces for the decode benchmark: sort and xz -9 over a generated text, traced by xlat.
BENCH := out/bench
$(BENCH)/sort.xlat $(BENCH)/xz.xlat &: | setup
	@mkdir -p $(BENCH)
	@seq -f "line %g of the xlat decode benchmark input" 1 1000000 > $(BENCH)/decode-input.txt
	$(VENV)/bin/xlat trace --no-progress -o $(BENCH)/sort.xlat -- sort -r $(BENCH)/decode-input.txt > /dev/null
	$(VENV)/bin/xlat trace --no-progress --max 100000000 -o $(BENCH)/xz.xlat -- xz -9 -c $(BENCH)/decode-input.txt > /dev/null

bench: setup $(BENCH)/sort.xlat $(BENCH)/xz.xlat
	XLAT_BENCH_FILES=$(CURDIR)/$(BENCH)/sort.xlat,$(CURDIR)/$(BENCH)/xz.xlat cargo bench -p xlat-trace --bench decode
	cargo bench -p xlat-core --bench sim
	@for b in benches/[!_]*.py; do [ -f "$$b" ] || continue; $(PY) "$$b" || exit 1; done

clean:
	cargo clean
	rm -rf $(VENV) out dist
