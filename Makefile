# The two commands of the README:
#   make demo   set up everything and run the demo (web + worker + data)
#   make test   set up everything and run the whole test suite
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint install install-gpu benchmark screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# torch (CPU wheel 2.13.0 here; a CUDA build on GPU machines) and transformers,
# for local models: generation and local judges on `gpu` workers.
install-gpu: $(STAMP)
	$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/python -m pip install --quiet -e ".[dev,gpu]"

demo: $(STAMP)
	$(BIN)/python manage.py run_demo

# The suite in parallel (pytest-xdist) on a machine of 4 cores or more, one
# worker per core; each worker has its own test database, Redis database and
# var/ folder (config/settings/test.py). On fewer cores it runs in one process:
# on a 2-core CI machine 4 workers took 23.5 min where one process took 36.7 min,
# but the cluster rehearsal's timing check failed once under that load.
# TEST_WORKERS=N chooses.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -ge 4 ]; then echo $$n; else echo 0; fi)

# The project's bytecode first: the suite starts some hundred Python processes
# (commands, workers, scripts), and where PYTHONDONTWRITEBYTECODE is set each
# would compile the project again (compileall writes it all the same).
test: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 -x '/(\.venv|var|node_modules)/' .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Every app, and the containers' checks (deploy/), checked by mypy (with django-stubs).
MYPY_PACKAGES ?= core config users runs llm corpus generation judging annotator analysis adaptive webhooks console demo deploy

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy $(MYPY_PACKAGES)

benchmark: $(STAMP)
	$(BIN)/python benchmarks/import_speed.py

# Every page a person sees at 1280 and 375 px, into docs/screenshots/ (builds its
# own data in a scratch folder; needs Debian's Chromium: apt-get install chromium).
# A few pages: make screenshots SCREENSHOT_ARGS="--pages login,report --devices desktop".
screenshots: $(STAMP)
	$(BIN)/python -m demo.screenshots --output docs/screenshots $(SCREENSHOT_ARGS)
