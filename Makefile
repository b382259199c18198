# FaithLab: `make run` serves the app with demo data; `make test` runs the whole suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
STAMP := $(VENV)/.installed

.PHONY: run test venv worker web lint bench clean

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

# The script is exec'd, so that it is make's own child: a Ctrl-C that stopped everything (the script's status 0) then
# ends without make's "*** [run] Interrupt" line (dash, as /bin/sh, dies of the Ctrl-C itself whatever the script
# does), and a failure (status 1) still ends with make's "Error 1".
run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo --if-empty
	$(PY) manage.py collectstatic --noinput -v0
	@echo "FaithLab on http://$(HOST):$(PORT)/"
	@HOST=$(HOST) PORT=$(PORT) VENV=$(VENV) exec scripts/run-dev.sh

test: venv
	$(VENV)/bin/ruff check .
	scripts/system-deps.sh
	FAITHLAB_DATA_DIR=$$(mktemp -d /tmp/faithlab-test.XXXXXX) scripts/with-postgres.sh \
		$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .

bench: venv
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) var
