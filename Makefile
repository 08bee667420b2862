# grantlog — every target sets itself up: a fresh machine needs only Python 3.11+ (and Java 17
# for the Spark tests, which skip with the reason without it).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev-spark-peers

.PHONY: demo test lint typecheck unit bench bench-store bench-service clean install

# the dev tools, the Spark extra (pyspark, graphframes-py) and the peer engines: `make test`
# runs the Spark tests and checks the peers of the benchmarks against the oracle
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark,peers]'
	touch $(STAMP)

install: $(STAMP)

## The demo: the shipped Gravitino model on its example facts: an ALLOW with its proof, then a
## DENY (a DENY grant wins over an ALLOW) with its why-not tree.
demo: $(STAMP)
	$(BIN)/grantlog check --model gravitino --facts examples/gravitino/facts.gl \
		alice load_table m1.lakehouse.sales.orders --explain
	-$(BIN)/grantlog check --model gravitino --facts examples/gravitino/facts.gl \
		carol load_table m1.lakehouse.sales.customers --explain

## The whole test suite: lint, type check, unit/property/golden tests, rule-file tests.
test: $(STAMP) lint typecheck unit

unit: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check grantlog grammar engine spark_bridge rules tests benchmarks tools
	$(BIN)/grantlog fmt --check rules examples tests/cases
	$(BIN)/python tools/gen_model_docs.py --check

typecheck: $(STAMP)
	$(BIN)/python tools/typecheck.py

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

clean:
	rm -rf $(VENV) build .mypy_cache .pytest_cache .ruff_cache .hypothesis .typecheck
