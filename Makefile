# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv when
# it is missing and install the project from its own pyproject.toml.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-unit test-s3 test-spark-only test-install test-spark lint docs bench bench-quick soak clean check-java s3a

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed"' \
	  || (echo "error: $(PYTHON) is older than 3.11; run: make PYTHON=python3.11 ..." && exit 1)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	@touch $(STAMP)

# Spark needs a Java 17 runtime. An installed wheel ships the Spark extension compiled, so
# users need `java` only; this source checkout (an editable install) compiles the extension
# from java/ at first use, and `make test` builds wheels: here `javac` is needed too.
check-java:
	@command -v java >/dev/null 2>&1 || { echo "error: 'java' not found. Spark needs Java 17: apt-get install -y openjdk-17-jre-headless"; exit 1; }
	@command -v javac >/dev/null 2>&1 || { echo "error: 'javac' not found. This source checkout compiles the listing Spark extension (java/) at first use, and building the wheel compiles it too: apt-get install -y openjdk-17-jdk-headless (an installed wheel needs java only)"; exit 1; }

# Spark's S3A connector (hadoop-aws + AWS SDK v2 modules, listing/spark/connector/pom.xml),
# fetched once with Maven into ~/.cache/spark-listing/s3a-<pom hash>/; listing.session() puts
# it on the classpath when it is there. Outside make: python -m listing.spark.s3a
s3a: $(STAMP)
	@command -v mvn >/dev/null 2>&1 || { echo "error: 'mvn' not found. Spark's S3A connector is fetched with Maven: apt-get install -y maven"; exit 1; }
	$(PY) -m listing.spark.s3a

demo: $(STAMP) check-java s3a
	$(PY) -m listing.cli demo

# The tests that start no Spark run in two processes (pytest-xdist: each its own S3
# server; moto and the client share one interpreter's GIL otherwise), then those that do,
# in one (one Spark session for them all); both parts run, and either failing fails.
test: lint check-java s3a
	@$(PY) -m pytest -n 2 -m "not spark and not install"; a=$$?; \
	  $(PY) -m pytest -m "spark or install"; b=$$?; \
	  test $$a -eq 0 -a $$b -eq 0

# The suite by what a test needs (markers assigned in tests/groups.py; docs/testing.md).
# Together these four run what `make test` runs. test-unit: no Spark, no S3 server, no
# wheel install, under a minute; a test starting either without its marker fails there.
test-unit: $(STAMP)
	$(PY) -m pytest -m "unit"

test-s3: $(STAMP)
	$(PY) -m pytest -m "s3 and not spark and not install"

test-spark-only: $(STAMP) check-java s3a
	$(PY) -m pytest -m "spark and not install"

test-install: $(STAMP) check-java s3a
	$(PY) -m pytest -m "install"

# The Spark-touching tests (.ci/spark-tests; .ci/spark-tests-3.5 on 3.5) on another pyspark, e.g.
# `make test-spark SPARK=4.1.4`: a virtualenv holding that pyspark and this checkout
# (editable, dev extra), cached under ~/.cache/spark-listing/venvs/ keyed by the version,
# pyproject.toml and this folder; its S3A connector matches that pyspark's Hadoop.
SPARK ?= 4.1.4
test-spark: check-java
	@command -v mvn >/dev/null 2>&1 || { echo "error: 'mvn' not found. Spark's S3A connector is fetched with Maven: apt-get install -y maven"; exit 1; }
	SPARK=$(SPARK) PYTHON=$(PYTHON) .ci/test-spark

# ruff, then the import contracts (lint-imports) and the types (mypy): .ci/lint runs both on
# the installed layout (formats/ as listing/formats/, fixtures/ as listing/testing/), staged
# in .lint/. Contracts and mypy settings: pyproject.toml.
lint: $(STAMP)
	$(PY) -m ruff check listing formats fixtures tests examples bench build_support docs_hooks
	PY=$(PY) .ci/lint
	.ci/commit-subjects
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --quiet --site-dir .lint/site

# the documentation site (mkdocs.yml, docs/), built offline into site/; reference tables are
# generated from the code at build time (docs_hooks/generated.py)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

bench: $(STAMP) check-java s3a
	$(PY) -m pip install -q -e ".[dev,bench]"
	$(PY) -m bench

bench-quick: $(STAMP) check-java s3a
	$(PY) -m pip install -q -e ".[dev,bench]"
	$(PY) -m bench --quick

# not part of `make test`: the fault suite's mix (listing, to_arrow per format, a Spark count)
# for SOAK_MINUTES against moto behind the fault-injecting proxy, all on loopback; exits 1 on
# any wrong result. Options: python -m bench.soak --help
SOAK_MINUTES ?= 3
soak: $(STAMP) check-java
	$(PY) -m bench.soak --minutes $(SOAK_MINUTES)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .lint .hypothesis build *.egg-info \
	  site .docs-src
