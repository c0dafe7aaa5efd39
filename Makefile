# Concord: `make run` serves the demo on a bare machine; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-fast lint messages bench bench-load kernels vendor clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

## kernels: compile the analyses' numba kernels into their on-disk cache (core/stats/__pycache__),
## so that no researcher's first analysis pays for it; again whenever a kernel's source changes
## (numba keys its cache by the source file). run, test and bench depend on it; its stamp lives
## beside the cache, so that a checkout whose cache is gone compiles again.
KERNELS := core/stats/kernels.py core/stats/_bootstrap_compiled.py \
	core/stats/_competence_compiled.py core/stats/_subsets_compiled.py
KERNELS_STAMP := core/stats/__pycache__/kernels.stamp
$(KERNELS_STAMP): $(VENV)/.run-deps $(KERNELS)
	$(BIN)/python -m core.stats.kernels
	touch $@

kernels: $(KERNELS_STAMP)

## run: install, migrate, load the demo, serve on http://$(HOST):$(PORT) with one Celery worker
## and one Celery beat (the periodic sweep of jobs)
run: $(VENV)/.run-deps $(KERNELS_STAMP)
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py collectstatic --noinput -v0
	SITE_URL=http://$(HOST):$(PORT) $(BIN)/python manage.py seed_demo
	@echo "Serving on http://$(HOST):$(PORT)/ with one Celery worker and Celery beat; Ctrl-C stops all three."
	@$(BIN)/celery -A config worker -P solo --loglevel warning & worker=$$!; \
	$(BIN)/celery -A config beat --loglevel warning & beat=$$!; \
	trap 'kill $$worker $$beat 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

## test: install the test dependencies (and Chromium when possible), lint, then run every test in
## three passes side by side: all but the real-worker, browser and `serial` ones on every core
## (pytest-xdist, PYTEST_WORKERS processes, each with its own test database); the browser and
## `serial` ones one at a time in one process; the real-worker ones (mostly waiting on a worker
## they start or kill) in another, with a test database of its own (DATABASE_URL's name +
## `_worker`). Each of the two has the next Redis database of its own, so that no worker takes a
## task another pass sent; their reports are printed after the first's ($(WORKER_LOG),
## $(SERIAL_LOG)). PYTEST_ARGS go to all three.
PYTEST_WORKERS ?= auto
SERIAL_LOG ?= $(or $(CONCORD_VAR_DIR),var)/test-serial.log
WORKER_LOG ?= $(or $(CONCORD_VAR_DIR),var)/test-worker.log
test: $(VENV)/.test-deps $(KERNELS_STAMP) lint
	@command -v chromium >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null \
	  || { echo "Installing Chromium for the browser tests (apt)"; \
	       apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	$(BIN)/python manage.py collectstatic --noinput -v0
	@# A pass that selects no test exits 5; make test fails only if neither ran one, or one failed.
	@redis_db() { case "$$REDIS_URL" in \
	  redis://*/[0-9]*) echo "$${REDIS_URL%/*}/$$(( ($${REDIS_URL##*/} + $$1) % 16 ))";; \
	  redis://*) echo "$${REDIS_URL%/}/$$1";; *) echo "$$REDIS_URL";; esac; }; \
	mkdir -p "$$(dirname $(SERIAL_LOG))"; \
	REDIS_URL="$$(redis_db 1)" $(BIN)/python -m pytest -p no:cacheprovider \
	  -m "(e2e or serial) and not (worker and not e2e)" $(PYTEST_ARGS) \
	  > $(SERIAL_LOG) 2>&1 & serial_pid=$$!; \
	REDIS_URL="$$(redis_db 2)" DATABASE_URL="$${DATABASE_URL:+$${DATABASE_URL}_worker}" \
	  $(BIN)/python -m pytest -p no:cacheprovider -m "worker and not e2e" $(PYTEST_ARGS) \
	  > $(WORKER_LOG) 2>&1 & worker_pid=$$!; \
	trap 'kill $$serial_pid $$worker_pid 2>/dev/null' INT TERM; \
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile \
	  -m "not worker and not e2e and not serial" $(PYTEST_ARGS); parallel=$$?; \
	wait $$worker_pid; worker=$$?; \
	echo "make test: the real-worker pass, run beside it:"; cat $(WORKER_LOG); \
	wait $$serial_pid; serial=$$?; \
	echo "make test: the browser and serial pass, run beside it:"; cat $(SERIAL_LOG); \
	echo "make test: pytest exited $$parallel (in parallel), $$worker (real worker) and $$serial (browser, serial)"; \
	if [ $$parallel = 5 ] && [ $$serial = 5 ] && [ $$worker = 5 ]; then exit 5; fi; \
	for status in $$parallel $$worker $$serial; do [ $$status = 0 ] || [ $$status = 5 ] || exit $$status; done

## test-fast: the pure statistics and unit tests only (no database, no browser)
test-fast: $(VENV)/.test-deps
	$(BIN)/python -m pytest tests/unit -p no:django -q

## lint: ruff on the whole tree, mypy --strict with the Django and DRF stubs over core/ and the apps
## (a shrinking allow-list of modules not yet typed: pyproject.toml)
lint: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/mypy

## messages: extract and compile the annotator pages' translations (needs GNU gettext)
messages: $(VENV)/.run-deps
	$(BIN)/python manage.py makemessages -l fr --ignore=.venv --ignore=var
	$(BIN)/python manage.py compilemessages --ignore=.venv

bench: $(VENV)/.test-deps $(KERNELS_STAMP)
	$(BIN)/python -m bench.trust
	$(BIN)/python -m bench.crowd
	$(BIN)/python -m bench.export

## bench-load: answers/s and next-item pages/s on gunicorn + PostgreSQL (exits 1 if a target is missed)
bench-load: $(VENV)/.test-deps
	$(BIN)/python -m bench.load

## vendor: regenerate static/vendor/vega/ (and the test-only tests/e2e/vendor/axe-core/) from
## frontend/package-lock.json (needs Node and npm)
vendor:
	cd frontend && npm ci --no-audit --no-fund && npm run build

clean:
	rm -rf var .pytest_cache .hypothesis .mypy_cache
