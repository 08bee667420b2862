# grantlog — every target sets itself up: a fresh machine needs only Python 3.11+ (and Java 17
# for the Spark tests, which skip with the reason without it).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev-spark-peers

.PHONY: demo test browser explorer-assets test-long lint typecheck unit grammar vsix docs-html bench bench-store bench-service \
	bench-list bench-lsp bench-opa bench-heavy bench-verify bench-history bench-history-scale bench-compare bench-plan \
	bench-models bench-explorer clean install

# the dev tools, the Spark extra (pyspark, graphframes-py) and the peer engines: `make test`
# runs the Spark tests and checks the peers of the benchmarks against the oracle
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark,peers]'
	touch $(STAMP)

install: $(STAMP)

## The demo: the shipped Gravitino model on its example facts: an ALLOW with its proof, then a
## DENY (a DENY grant wins over an ALLOW) with its why-not tree. The DENY exits 1, as `check`
## does for a DENY: expected here, so only another exit (2: a user error, 3: a bug) fails.
demo: $(STAMP)
	@echo "== alice may load orders: expect ALLOW (exit 0) with its proof"
	$(BIN)/grantlog check --model gravitino --facts examples/gravitino/facts.gl \
		alice load_table m1.lakehouse.sales.orders --explain
	@echo "== carol may not load customers: expect DENY (exit 1) with its why-not tree"
	$(BIN)/grantlog check --model gravitino --facts examples/gravitino/facts.gl \
		carol load_table m1.lakehouse.sales.customers --explain || test $$? -eq 1

## The whole test suite: lint, type check, unit/property/golden tests, rule-file tests, and
## the TextMate grammar's tests when Node.js is there (it is on the project's machines).
test: $(STAMP) browser lint typecheck unit grammar

## Headless Chromium for the explorer's browser tests (tests/test_explorer_e2e.py), and Neovim for
## the language server's Neovim client test (tests/test_lsp.py): installed
## with apt-get when missing and apt-get is usable (root); otherwise those tests skip, saying why.
browser:
	@command -v chromedriver >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get install -y -q chromium chromium-driver >/dev/null; } \
		|| echo "browser tests will skip: chromium and chromium-driver are not installed"
	@command -v nvim >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& apt-get install -y -q neovim >/dev/null; } \
		|| echo "the Neovim client test (tests/test_lsp.py) will skip: neovim is not installed"

## The explorer's vendored front-end files (shiki's TextMate core bundled by esbuild, the grammar's
## copy, axe-core for the accessibility test), rebuilt from grantlog/explorer/assets/'s lock file
## with npm in a build folder (needs Node.js and the npm registry; the results are committed)
explorer-assets:
	bash tools/explorer_assets.sh

## the unit tests over PYTEST_WORKERS processes (pytest-xdist; 0: in this process, one at a
## time): the Spark tests and the browser tests each stay on one worker (tests/conftest.py)
PYTEST_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/python -m pytest -q --durations=25 -n $(PYTEST_WORKERS) --dist loadgroup

## The long local profile: the whole suite plus the tests marked `slow` and more examples of
## the slowest property tests (tests/conftest.py's LONG); about 5 minutes more than `make test`.
test-long: $(STAMP)
	GRANTLOG_LONG=1 $(MAKE) --no-print-directory test

lint: $(STAMP)
	$(BIN)/ruff check grantlog grammar engine spark_bridge rules tests benchmarks tools
	$(BIN)/grantlog fmt --check rules examples tests/cases
	$(BIN)/python tools/gen_model_docs.py --check
	$(BIN)/python tools/gen_man.py --check

typecheck: $(STAMP)
	$(BIN)/python tools/typecheck.py

# the VS Code extension's npm packages (vsce, vscode-tmgrammar-test, shiki), from its lock file
VSCODE := editors/vscode
$(VSCODE)/node_modules/.installed: $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## The TextMate grammar's tests (vscode-tmgrammar-test over editors/vscode/tests/*.test.gl).
grammar:
	@if command -v npm >/dev/null; then \
		$(MAKE) --no-print-directory $(VSCODE)/node_modules/.installed && \
		cd $(VSCODE) && npx vscode-tmgrammar-test -g syntaxes/grantlog.tmLanguage.json \
			"tests/*.test.gl"; \
	else echo "grammar tests skipped: Node.js (npm) is not installed"; fi

## The VS Code extension as editors/vscode/grantlog.vsix (code --install-extension ...).
vsix: $(VSCODE)/node_modules/.installed
	cd $(VSCODE) && npx vsce package --skip-license --allow-missing-repository \
		--out grantlog.vsix

## The shipped models as highlighted HTML (docs/models/*.html), with shiki and the grammar.
docs-html: $(VSCODE)/node_modules/.installed
	cd $(VSCODE) && node scripts/highlight.mjs

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

## Benchmarks; the peers (pyDatalog, clingo, Cedar, casbin, oso) come with the `bench` extra.
bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/datalog_bench.py
	$(BIN)/python benchmarks/incremental_bench.py
	$(BIN)/python benchmarks/peers_bench.py

## The durable store (issue 14) and the decision service over HTTP (issue 15, needs wrk).
bench-store: $(STAMP)
	$(BIN)/python benchmarks/store_bench.py --write

bench-service: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python benchmarks/service_bench.py --write

## Listing over the whole metalake (issue 16) and the language server's latency (issue 17).
bench-list: $(STAMP)
	$(BIN)/python benchmarks/list_bench.py --write

bench-lsp: $(STAMP)
	$(BIN)/python benchmarks/lsp_bench.py --write

## OPA's Data API (Trino's allow request) against /v1/check over HTTP at 1M tables (issue 18).
bench-opa: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python benchmarks/opa_bench.py --write

## Checks while one client runs the heaviest reads (issue 24): check p99 with and without it,
## the heavy answers, the server's memory; 100k tables, 60 s per round (needs wrk).
bench-heavy: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python benchmarks/heavy_read_bench.py --write

## grantlog store verify over 1M tables in SQLite and PostgreSQL (issue 24 item 10).
bench-verify: $(STAMP)
	$(BIN)/python benchmarks/verify_bench.py

## history: as-of answers with and without checkpoints, timelines, store growth (issue 28)
bench-history: $(STAMP)
	$(BIN)/python benchmarks/history_bench.py --tables 2000 --transactions 1000

## history at scale: 1M tables x 1M transactions (built once, ~20 min, ~1.1 GB under /tmp),
## an as-of check at random past revisions by point reads, store growth per transaction, the
## timeline of one (subject, resource) over the whole history (issue 28; SCALE=100000 for a
## quicker run); then the whole-platform review on Spark, local[2], of REVIEW_TABLES tables x
## 1,000 transactions x REVIEW_USERS users (its rows grow with users x objects x privileges:
## ~20 per user and object; benchmarks/RESULTS.md "The review on Spark at scale")
SCALE ?= 1000000
REVIEW_TABLES ?= 1000
REVIEW_USERS ?= 1000
bench-history-scale: $(STAMP)
	$(BIN)/python benchmarks/history_scale.py --tables $(SCALE) --transactions $(SCALE)
	$(BIN)/python benchmarks/history_timeline_bench.py --tables $(SCALE) --transactions $(SCALE)
	$(BIN)/python benchmarks/spark_review_bench.py --tables $(REVIEW_TABLES) --transactions 1000 \
		--users $(REVIEW_USERS) --repeat 1 --master 'local[2]'

## Planning bodies of 100 to 1,600 literals; "did you mean" over 1k-8k misspelled relations
## (issue 26 item 3).
bench-plan: $(STAMP)
	$(BIN)/python benchmarks/plan_bench.py --write

## Own models against the shipped one (issue 26): list, filters and checks of the three models
## of benchmarks/models/ and of the shipped Gravitino model on the same generated worlds.
## At 100k and 1M tables by default; `make bench-models SIZES=100000` for the first only.
SIZES ?= 100000 1000000
bench-models: $(STAMP)
	$(BIN)/python benchmarks/models_bench.py --sizes $(SIZES) --write

## The explorer's asked check at 100k tables (issue 29: answered and drawn <= 200 ms): in
## process, over HTTP against `grantlog explore`, and drawn in headless Chromium; the shipped
## model and two own models of benchmarks/models/.
bench-explorer: $(STAMP) browser
	$(BIN)/python benchmarks/explorer_bench.py --http --browser

## Check, list, filter and service figures of an older revision against this tree, alternating
## (issue 25): BEFORE is a python with the old revision installed (see compare_revisions.py).
BEFORE ?= /tmp/venv-before/bin/python
bench-compare: $(STAMP)
	command -v wrk >/dev/null || apt-get install -y wrk
	$(BIN)/python benchmarks/compare_revisions.py --before $(BEFORE)

clean:
	rm -rf $(VENV) build .mypy_cache .pytest_cache .ruff_cache .hypothesis .typecheck
