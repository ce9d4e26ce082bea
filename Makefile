# The two commands of the README:
#   make demo   set up everything and run the demo (web + worker + data)
#   make test   set up everything and run the whole test suite
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint install install-gpu benchmark screenshots

# The first run installs for some minutes: each step says what it does.
$(STAMP): pyproject.toml
	@echo "Concord: setting up $(VENV) (first run, or pyproject.toml changed; a few minutes)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Concord: [1/2] pip itself"
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "Concord: [2/2] Concord and its dependencies (Django, Celery, pandas, scipy, ...)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)
	@echo "Concord: $(VENV) is ready"

install: $(STAMP)

# torch (CPU wheel 2.13.0 here; a CUDA build on GPU machines) and transformers,
# for local models: generation and local judges on `gpu` workers.
install-gpu: $(STAMP)
	$(BIN)/python -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(BIN)/python -m pip install --quiet -e ".[dev,gpu]"

demo: $(STAMP)
	$(BIN)/python manage.py run_demo

# The suite in parallel (pytest-xdist), two workers per core: most of its
# long tests wait (on subprocesses, servers, Chromium, a Docker build) more
# than they compute. Each worker has its own test database, Redis database and
# var/ folder (config/settings/test.py). Torch computes on one thread per
# process there: the workers already fill the cores, and its threads' spinning
# costs CPU time the others need (its tests took 10 % less CPU time so).
# The cluster rehearsal (tests/cluster) runs after it, without the suite's
# load: its takeover timings are checked against the wall clock, and under the
# parallel run's load one check failed once. Its two rehearsals run side by
# side (each its own namespaces; together they keep two cores 35 % busy).
# TEST_WORKERS=0 runs everything in one process; TEST_WORKERS=N chooses.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); if [ $$n -ge 2 ]; then echo $$((2 * n)); else echo 0; fi)

# The project's bytecode first: the suite starts some hundred Python processes
# (commands, workers, scripts), and where PYTHONDONTWRITEBYTECODE is set each
# would compile the project again (compileall writes it all the same).
# Exit status 5 is pytest's "no test selected" (PYTEST_ARGS naming only
# cluster tests, or none). Without PYTEST_ARGS the second step collects
# tests/cluster only (the whole suite's collection takes some 20 s).
test: $(STAMP)
	$(BIN)/python -m compileall -q -j 0 -x '/(\.venv|var|node_modules)/' .
ifeq ($(TEST_WORKERS),0)
	$(BIN)/python -m pytest $(PYTEST_ARGS)
else
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not cluster" $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(BIN)/python -m pytest -n 2 -m cluster $(if $(PYTEST_ARGS),$(PYTEST_ARGS),tests/cluster) || [ $$? -eq 5 ]
endif

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
