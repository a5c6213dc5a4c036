# One command each: `make run` starts a node with embedded defaults, `make test` runs the suite.
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,fast]'
	touch $@

.PHONY: venv run test test-slow bench lint
venv: $(VENV)/.installed

run: venv
	$(VENV)/bin/leveret server

test: venv
	$(PY) -m pytest -q -p no:cacheprovider

test-slow: venv
	LEVERET_SLOW=1 $(PY) -m pytest -q -p no:cacheprovider

bench: venv
	$(PY) bench/side_by_side.py

lint: venv
	$(VENV)/bin/ruff check leveret cluster federation tests bench
