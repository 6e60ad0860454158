# The two set-up commands of the README. Both create .venv if it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint bench serve docs messages

$(PY):
	$(PYTHON) -m venv $(VENV)

# The clone's environment has the training extra (torch, sb3-contrib, matplotlib, onnx);
# `pip install .` alone is the light install that plays, serves and evaluates.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[train]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[train,dev,ray,jax]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(PY) demo.py

# The browser tests drive Debian's chromium (Playwright cannot download browsers here);
# installed when missing, where apt-get may (as root), else those tests skip.
# axe-core (npm, pinned) checks the page's accessibility in the browser tests.
AXE_VERSION := 4.14.1
AXE := tests/.axe/node_modules/axe-core/axe.min.js

$(AXE):
	npm install --prefix tests/.axe --no-save --no-package-lock --no-audit --no-fund \
		axe-core@$(AXE_VERSION) >/dev/null \
		|| echo "axe-core could not be installed: the accessibility tests will be skipped"

# TypeScript (npm, pinned) type-checks the declarations of the npm package (ports/js).
TYPESCRIPT_VERSION := 5.6.3
TSC := tests/.typescript/node_modules/typescript/bin/tsc

$(TSC):
	npm install --prefix tests/.typescript --no-save --no-package-lock --no-audit --no-fund \
		typescript@$(TYPESCRIPT_VERSION) >/dev/null \
		|| echo "typescript could not be installed: the type check of ports/js is skipped"

test: $(VENV)/.installed-dev $(AXE) $(TSC)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium) \
		|| echo "chromium could not be installed: the browser tests will be skipped"
	@# The JavaScript port (ports/js) replays the export bundle's test vectors under Node.
	@command -v node >/dev/null || apt-get install -y -qq --no-install-recommends nodejs \
		>/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq \
		--no-install-recommends nodejs >/dev/null) \
		|| echo "nodejs could not be installed: the JavaScript port's tests will be skipped"
	@# Hindi needs a Devanagari font (Debian's chromium brings Latin and Cyrillic ones).
	@fc-list :lang=hi | grep -q . || apt-get install -y -qq --no-install-recommends \
		fonts-lohit-deva >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq \
		--no-install-recommends fonts-lohit-deva >/dev/null) \
		|| echo "no Devanagari font: its browser check is skipped"
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n auto  # one test process per CPU (pytest-xdist)
	@# The documentation site: a broken link or a bad API reference fails the build.
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	$(PY) -m ruff format --check .

serve: $(VENV)/.installed
	$(PY) -m fivethousand_rl.webplay

# The documentation site at http://127.0.0.1:8000, rebuilt as its pages change.
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001  # beside make serve (8000)

bench: $(VENV)/.installed
	$(PY) benchmarks/speed.py

# The translations (envs/locale): the template extracted from the code, then each
# language's catalogue updated (new texts empty, changed ones fuzzy: the tests fail until
# they are translated). Only the .po files are kept; fivethousand_rl.envs.i18n reads them at run time.
LANGS := fr ms ru hi
messages: $(VENV)/.installed-dev
	$(VENV)/bin/pybabel extract -F babel.cfg -c Translators: --sort-by-file --no-wrap \
		--omit-header -o envs/locale/messages.pot .
	for lang in $(LANGS); do \
		test -f envs/locale/$$lang/LC_MESSAGES/fivethousand.po \
			|| $(VENV)/bin/pybabel init -i envs/locale/messages.pot -d envs/locale -D fivethousand -l $$lang; \
		$(VENV)/bin/pybabel update -i envs/locale/messages.pot -d envs/locale -D fivethousand \
			-l $$lang --ignore-obsolete --no-wrap; \
	done
