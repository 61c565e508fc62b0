# Sticker Booth — every developer and CI command. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
SRC_PATHS := . services/ingest services/worker services/delivery services/leads services/telegram-gateway
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help install check lint format test test-fast test-integration test-e2e test-chaos test-browser test-all chaos demo up preflight render face-eval deploy-check compose-check clean

help:  ## list the commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(STAMP): requirements.txt requirements-dev.txt
	@command -v $(PYTHON) >/dev/null || { echo "needs $(PYTHON) (pinned Python 3.11)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -c 'import pathlib, sys, sysconfig; pathlib.Path(sysconfig.get_paths()["purelib"], "sticker_booth_src.pth").write_text("".join(str(pathlib.Path(p).resolve()) + "\n" for p in sys.argv[1:]))' $(SRC_PATHS)
	touch $(STAMP)

# promtool (alert rule unit tests) from Debian's `prometheus` package, unpacked into .venv/bin: installing
# the package itself would also start a Prometheus daemon on machines with systemd.
PROMTOOL := $(VENV)/bin/promtool
$(PROMTOOL): | $(STAMP)
	@set -e; dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; cd "$$dir"; \
	  apt-get download prometheus >/dev/null 2>&1 || { $(SUDO) apt-get update -q >/dev/null && apt-get download prometheus; }; \
	  dpkg-deb -x prometheus_*.deb root; install -m 0755 root/usr/bin/promtool $(abspath $(PROMTOOL))
	$(PROMTOOL) --version | head -1

# The published models of our custom resources' API types (KEDA ScaledObject, prometheus-operator PodMonitor),
# pinned by tests/deploy/crd_models/package-lock.json and installed by `npm ci` into its git-ignored node_modules.
CRD_MODELS := tests/deploy/crd_models
CRD_MODELS_STAMP := $(CRD_MODELS)/node_modules/.package-lock.json
$(CRD_MODELS_STAMP): $(CRD_MODELS)/package.json $(CRD_MODELS)/package-lock.json
	@command -v npm >/dev/null || { echo "needs node and npm (make deploy-check validates the custom resources with them)"; exit 1; }
	npm ci --prefix $(CRD_MODELS) --no-audit --no-fund --loglevel=error
	touch $(CRD_MODELS_STAMP)

install: $(STAMP) $(PROMTOOL) $(CRD_MODELS_STAMP)  ## build .venv with the pinned dependencies (promtool from Debian, the CRD models from npm)

check: install  ## ruff (lint + format check), mypy and the import rules (lint-imports, pyproject [tool.importlinter])
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy shared cartoon services simulators devstack
	$(VENV)/bin/lint-imports --no-cache

format: install  ## apply ruff's fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Python's bytecode cache for every test process: with PYTHONDONTWRITEBYTECODE set (as on some CI images)
# each pytest process rewrote and compiled every test module again (collection 11.6 → 7.0 CPU-s), and each
# stack process recompiled the code it imports.
unexport PYTHONDONTWRITEBYTECODE

# Tiers by cost: tests/conftest.py marks each test by what it uses (README "Tests"). `make test` runs all four.
FAST_MARKS := not (integration or heavy or e2e or browser or slow)
INTEGRATION_MARKS := (integration or heavy) and not (e2e or browser or slow)
E2E_MARKS := e2e and not (browser or slow or chaos)
# The short chaos run (SIGKILLs, Redis/Postgres restarts, every fault kind; ~6 min, most of it waiting out
# Telegram's 120 s retry_after holds at ~40 % of one core).
CHAOS_MARKS := chaos and not slow
# pytest-xdist only where two workers measured faster on a 2-core machine (README "Tests"); a worker is a
# test run of its own (tests/conftest.py: its own slot, Redis databases and Postgres database). loadfile: a
# module's stack starts once; the files with most tests (the journeys, and the leads with their real 120 s
# retry_after) go first, one to each worker, so the leads' wait overlaps the other worker's tests.
FAST_XDIST :=
INTEGRATION_XDIST := -n 2 --dist loadfile
E2E_XDIST := -n 2 --dist loadfile
# `make test`: the chaos run in the background (its output in var/test-chaos.log, printed at the end) beside
# one run of the fast, integration and e2e tiers on 3 workers, so its waits and theirs overlap (README "Tests").
TEST_XDIST := -n 3 --dist loadfile
CHAOS_LOG := var/test-chaos.log

test: install  ## all four tiers: the chaos run beside the other three on 3 workers (DATABASE_URL/REDIS_URL, else embedded)
	@mkdir -p var; $(MAKE) --no-print-directory test-chaos >$(CHAOS_LOG) 2>&1 & chaos=$$!; status=0; \
	$(PY) -m pytest -m "($(FAST_MARKS)) or ($(INTEGRATION_MARKS)) or ($(E2E_MARKS))" $(TEST_XDIST) $(PYTEST_ARGS) || status=1; \
	wait $$chaos || status=1; echo "--- make test-chaos (ran beside the tiers above; $(CHAOS_LOG)) ---"; \
	cat $(CHAOS_LOG); exit $$status

test-fast: install  ## unit tests without servers, processes or heavy images (under a minute)
	$(PY) -m pytest -m "$(FAST_MARKS)" $(FAST_XDIST) $(PYTEST_ARGS)

test-integration: install  ## real Postgres/Redis, child processes, heavy images; no process stacks
	$(PY) -m pytest -m "$(INTEGRATION_MARKS)" $(INTEGRATION_XDIST) $(PYTEST_ARGS)

test-e2e: install  ## the services as processes: journeys, leads, preflight, the benchmarks' quick runs (2 workers)
	$(PY) -m pytest -m "$(E2E_MARKS)" $(E2E_XDIST) $(PYTEST_ARGS)

test-chaos: install  ## the short chaos run: journeys and leads under SIGKILLs and restarts, 0 let down (~6 min)
	$(PY) -m pytest -m "$(CHAOS_MARKS)" tests/chaos $(PYTEST_ARGS)

test-browser: install  ## the kiosk and admin pages in Debian's Chromium (installed by apt when missing)
	@test -x /usr/bin/chromium || { $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y chromium; }
	$(PY) -m pytest -m browser tests/browser $(PYTEST_ARGS)

chaos: install  ## 100 journeys + 100 leads under SIGKILLs and Redis/Postgres restarts; 0 lost, 0 doubled
	$(PY) -m devstack chaos $(CHAOS_ARGS)

test-all: install  ## every tier, slow suites included
	$(PY) -m pytest $(PYTEST_ARGS)

demo: install  ## a real photo becomes a sticker-set link (PHOTO=path), no accounts needed
	$(PY) -m devstack demo $(if $(PHOTO),--photo "$(PHOTO)")

up: install  ## start the whole stack locally and keep it running (GATEWAYS=2: with the gateway's hot standby)
	$(PY) -m devstack up $(if $(GATEWAYS),--gateways $(GATEWAYS))

preflight: install  ## before the doors open: every check against the stack `make up` runs; exit 1 if one fails
	$(PY) -m devstack preflight

render: install  ## a pack from a photo without the services: PHOTO=… OUTFIT=chef VARIANT=consistency OUT=out/render
	$(PY) -m devstack.render --photo "$(or $(PHOTO),../shared/fixtures/photos/astronaut-portrait.png)" \
		--outfit "$(or $(OUTFIT),chef)" --variant "$(or $(VARIANT),consistency)" --out "$(or $(OUT),out/render)"

bench: install  ## every benchmark of issue 12, written to BENCHMARKS.md (python -m devstack.bench --only NAME for one)
	$(PY) -m devstack.bench

face-eval: install  ## score the face check on the face set: Haar vs dlib, false refusals/accepts, CPU time (FACE_EVAL_ARGS)
	$(PY) -m devstack face-eval $(FACE_EVAL_ARGS)

deploy-check: install  ## lint the Dockerfile, validate compose.yaml, render k8s and validate it (CRDs too), monitoring/ and its runbooks
	$(PY) -m pytest tests/deploy $(PYTEST_ARGS)

# Once per update mode (issue 22): polling, then webhook; each is a whole check of its own (up, faults, down -v).
COMPOSE_CHECK_MODES ?= polling webhook
compose-check: install  ## docker compose up for real, in each update mode: journeys, scale, faults, failover, Prometheus; down -v
	@status=0; for mode in $(COMPOSE_CHECK_MODES); do $(PY) -m devstack.compose_check --updates $$mode $(COMPOSE_CHECK_ARGS) || status=1; done; exit $$status

clean:  ## remove the venv and local state
	rm -rf $(VENV) var out
