# Two commands do everything on a fresh machine:  `make book`  and  `make test`.
# Both create the virtual environment .venv from requirements.txt when it is missing or stale.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REPRO_SCALE ?= quick
export REPRO_SCALE
# Quiet, single-threaded-BLAS-safe defaults for the build; figures need the inline backend, so
# MPLBACKEND is deliberately not set.
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export XLA_PYTHON_CLIENT_PREALLOCATE := false

# Quick scale builds into ./_build; other scales into their own folder, each with its own execution cache,
# which _ext/book_cache.py clears when the package, data/ or a REPRO_* variable changed.
BUILD_ROOT := $(if $(filter quick,$(REPRO_SCALE)),.,_build_$(REPRO_SCALE))
HTML := $(BUILD_ROOT)/_build/html

.PHONY: book pdf test lint format venv bench lab print-lab-env clean help

help:
	@echo "make book   - build the book (HTML in $(HTML)/index.html) at REPRO_SCALE=$(REPRO_SCALE)"
	@echo "make pdf    - the PDF edition ($(PDF)), checked"
	@echo "make test   - make lint, then the unit tests and every chapter under nbval"
	@echo "make lint   - ruff: lint and format check of the whole tree (make format applies the formatter)"
	@echo "make bench  - solver benchmark table"
	@echo "make lab    - JupyterLab on book/: the chapters open as notebooks, run with the venv's kernel (LAB_ARGS=...)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

book: $(STAMP)
	$(BIN)/python _ext/book_cache.py $(BUILD_ROOT)
	$(BIN)/jupyter-book build -W --keep-going --all --path-output $(BUILD_ROOT) .
	@echo "Book built: open $(HTML)/index.html"

# The PDF edition: the single-page HTML (same execution cache as `make book`), printed by headless Chromium
# with a local MathJax, then checked. Chromium and poppler come from Debian's archive when missing (as root).
PDF := $(BUILD_ROOT)/_build/pdf/attention-paths.pdf
PDF_MATHJAX := $(or $(MATHJAX_DIR),$(CURDIR)/.cache/mathjax/package/es5)
pdf: $(STAMP)
	@{ command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null && \
	  command -v pdftotext >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && apt-get install -y -q chromium poppler-utils >/dev/null; } || \
	  { echo "make pdf needs Chromium (or Google Chrome) and poppler-utils"; exit 1; }
	@test -f $(PDF_MATHJAX)/tex-mml-chtml.js || \
	  (mkdir -p .cache/mathjax && cd .cache/mathjax && npm pack --silent mathjax@3.2.2 >/dev/null && tar xzf mathjax-3.2.2.tgz)
	$(BIN)/python _ext/book_cache.py $(BUILD_ROOT)
	$(BIN)/jupyter-book build -W --keep-going --all --builder singlehtml --path-output $(BUILD_ROOT) .
	$(BIN)/python _ext/pdf.py $(BUILD_ROOT)/_build/singlehtml $(PDF) --mathjax $(PDF_MATHJAX)
	$(BIN)/python _ext/pdf.py --check $(PDF) $(BUILD_ROOT)/_build/singlehtml
	@# the published site carries the PDF next to its front page (the link on book/intro.md)
	@if [ -d $(HTML) ]; then cp $(PDF) $(HTML)/attention-paths.pdf.tmp && mv $(HTML)/attention-paths.pdf.tmp $(HTML)/attention-paths.pdf; fi
	@echo "PDF: $(PDF)"

# ruff's settings are in pyproject.toml; .pre-commit-config.yaml runs the same two checks before a commit
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_solver.py

# Run the chapters as notebooks: JupyterLab with the environment in .binder/lab-env.sh (also Binder's start):
# the project's own Jupyter settings (.binder/jupyter: jupytext opens the MyST .md files as notebooks; nothing
# is written to ~/.jupyter), REPRO_SCALE and the book's quiet defaults; ATTENTION_PATHS_DATA is kept when set.
# The kernel is the venv's python3. Extra options: make lab LAB_ARGS="--port 8890 --no-browser".
# make -s print-lab-env shows the variables (tests/book/test_lab.py starts the server through this target).
LAB_ARGS ?=
LAB_ENV := source .binder/lab-env.sh
lab: $(STAMP)
	$(LAB_ENV) && exec $(BIN)/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/book $(LAB_ARGS)

print-lab-env:
	@$(LAB_ENV) && for v in $$(sed -n 's/^export \([A-Z_]*\)=.*/\1/p' .binder/lab-env.sh) ATTENTION_PATHS_DATA; do \
	  [ -z "$${!v+x}" ] || echo "$$v=$${!v}"; done

clean:
	rm -rf _build _build_* .pytest_cache
