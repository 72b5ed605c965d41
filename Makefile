# Two commands do all the set-up on a fresh machine:
#   make book   builds the HTML book into _build/html (creates .venv, installs everything)
#   make test   runs the test suite (creates .venv, installs everything)
#   make lab    opens the chapters in JupyterLab (creates .venv, installs everything)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: book test lint bench lab clean-book

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.14.1 torchvision==0.29.1
	$(BIN)/pip install -q -e ".[book,test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

book: $(STAMP)
	FTCL_BOOK_BUILD=1 $(BIN)/jupyter-book build . --warningiserror --keep-going

lab: $(STAMP)
	$(BIN)/jupyter lab book/

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python -m benchmarks.bench overhead

clean-book:
	rm -rf _build
