# `make demo`: the main job end to end on a local sandbox. `make test`: the whole suite.
# `make test-long`: the slow variants, the compatibility suite's whole release matrix among them.
# `make support-table`: render the README's support table from tests/compat/results.json.
# `make cli-doc`: render docs/cli.md, the command reference, from the option table.
# `make wheel-check`: the wheel as `pip install` gives it, run on its own (.ci/wheel-check).
# All build their own virtualenv; Java 17 must be on PATH (the sandbox and Spark run on it).
# The demo's broker is Kafka 3.9.2; `make demo KAFKA_VERSION=1.1.1` runs another release
# (any `zk2kafka sandbox up --kafka-version` takes: 0.10.2.2, 1.1.1, 2.4.1, 2.8.2, 3.6.2, 3.9.2).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
ZK2KAFKA := $(BIN)/zk2kafka
DEMO_STATE ?= zk2kafka-state/demo
PYTEST_ARGS ?=
KAFKA_VERSION ?= 3.9.2
# `make test`'s parallel workers, each with a session cluster of its own (docs/testing.md: the suite
# mostly waits on servers, so three keep 2 cores busy); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

.PHONY: install demo test test-long support-table cli-doc wheel-check lock-jars clean image

$(VENV)/.installed: pyproject.toml
	@command -v java >/dev/null || { echo "Java 17 is required (apt-get install openjdk-17-jre-headless)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@# The Spark driver's class-data archive (migrate/diff/cds.py): each diff then starts sooner.
	$(BIN)/python -m migrate.diff.cds >/dev/null
	@touch $@

install: $(VENV)/.installed

# The README's road on a fresh sandbox, seeded: `scan`, the `diff` (a dry run: the plan and its
# report), that reviewed plan executed with `migrate --execute --plan <the diff's plan id>`,
# `verify --run <that run>` and `status <that run>`; then what it showed, from the diff's
# summary.json: the groups moved, and those the seed's planted blockers held back, and why. The
# sandbox goes down at the end, also on Ctrl-C. Exit 3 (blockers) is expected of the diff and the
# migrate: the seed plants odd cases on purpose; verify --run must pass.
demo: install
	@set -e; \
	rm -rf $(DEMO_STATE); \
	trap '$(ZK2KAFKA) sandbox down --state-dir $(DEMO_STATE) >/dev/null' EXIT INT TERM; \
	eval "$$($(ZK2KAFKA) sandbox up --kafka-version $(KAFKA_VERSION) --state-dir $(DEMO_STATE))"; \
	$(ZK2KAFKA) sandbox status --state-dir $(DEMO_STATE); \
	$(ZK2KAFKA) sandbox seed --state-dir $(DEMO_STATE); \
	z() { echo; echo "== zk2kafka $$*"; $(ZK2KAFKA) "$$@" --state-dir $(DEMO_STATE) && rc=0 || rc=$$?; \
	      [ $$rc -eq 0 ] || [ $$rc -eq 3 ] || exit $$rc; }; \
	z scan; \
	z diff; \
	summary=$$(grep -l '"command": "diff"' $(DEMO_STATE)/reports/*/summary.json | tail -n 1); \
	plan=$$(jq -r .plan_id "$$summary"); \
	echo "(the plan to review, then execute: $$plan, also plan_id in $$summary)"; \
	z migrate --execute --plan "$$plan"; \
	run=$$($(ZK2KAFKA) status --json --state-dir $(DEMO_STATE) \
	       | jq -r '[.runs[] | select(.kind == "migrate")][-1].run'); \
	z verify --run "$$run"; \
	[ $$rc -eq 0 ] || { echo "demo: verify --run $$run found an offset that does not hold (exit $$rc)"; exit $$rc; }; \
	z status "$$run"; \
	echo; echo "== what the demo showed"; \
	echo "the reviewed plan $$plan, executed as run $$run,"; \
	echo "moved the offsets of these groups into Kafka (how many in each), and verify --run found"; \
	echo "every one still there:"; \
	jq -r '"  " + ([.per_group[] | select(.planned > 0) | "\(.group) (\(.planned))"] | join(", "))' "$$summary"; \
	echo "left as they were in both stores, the rows the seed plants blockers in on purpose (a group"; \
	echo "named above too had its other offsets moved):"; \
	jq -r '.per_group[] | select(.blockers > 0) | "  \(.group): \(.blockers) row(s); first: \(.first_blocker)"' "$$summary"; \
	jq -r '"nothing to move (the report says why): " + ([.per_group[] | select(.planned == 0 and .blockers == 0) | "\(.group) (\(.counts | keys | join(", ")))"] | join(", "))' "$$summary"; \
	echo "demo state and reports: $(DEMO_STATE)"; \
	echo "the diff's report, for a browser: file://$$(cd "$$(dirname "$$summary")" && pwd)/report.html"

# ruff first: a lint finding fails in seconds, before the suite's real services start.
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)

test-long: install
	$(BIN)/python -m pytest -m slow $(PYTEST_ARGS)

support-table:
	$(PYTHON) tests/compat/support_table.py

# Render docs/cli.md from the option table (tests/unit/test_cli_reference.py fails when it is stale).
cli-doc: install
	$(BIN)/python -m migrate.cli_reference --write

# The wheel built from the checkout, installed into a new virtualenv (not .venv) and run from
# outside the checkout: --help, sandbox up/status/seed, scan, diff, sandbox down. About two minutes.
wheel-check:
	PYTHON=$(PYTHON) .ci/wheel-check

# The container image (docker/Dockerfile) as zk2kafka:local, with Docker where an engine answers, else
# podman; where python:3.11-slim-bookworm cannot be pulled, a local base made with debootstrap
# (docker/make-base, kept between runs). tests/container runs it. docker/README.md has the times.
image:
	docker/build-image

# Maintainers: re-resolve the pinned sandbox jars with Maven after changing BUNDLE_ROOTS.
lock-jars: install
	$(BIN)/python -m migrate.jvm.artifacts relock

clean:
	rm -rf $(VENV) zk2kafka-state .pytest_cache build *.egg-info
