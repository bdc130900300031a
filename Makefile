# levelcode-hooks: build, test, lint, install, bench, fuzz, soak.
CARGO ?= cargo
PREFIX ?= $(HOME)/.local

.PHONY: build static test lint install bench example npm package-deps bun otlp-python

# The host triple; on Linux with glibc `make static` links the C library in, skips position
# independence and lays the functions a dispatch runs out side by side, so the dispatcher starts
# about as fast as /bin/true (benches/static-rustflags.sh gives the flags; docs/BENCHMARKS.md).
# The flags are scoped to an explicit --target so that build scripts and proc-macro crates,
# which cannot be static, are built as usual.
HOST := $(shell rustc -vV | sed -n 's/^host: //p')

build:
	$(CARGO) build --release

ifneq (,$(findstring linux-gnu,$(HOST)))
RELEASE_BIN := target/$(HOST)/release/levelcode-hooks
static:
	CARGO="$(CARGO)" bash benches/static-build.sh $(HOST)
else
RELEASE_BIN := target/release/levelcode-hooks
static: build
endif

# The whole suite, as README.md and .ci/run give it (Bun first: the sandbox's tests run it
# confined): the Rust tests, then the npm packages
# (`make npm`), then the TypeScript client's typecheck and tests against the binary just built.
test: otlp-python bun
	$(CARGO) test --all-targets
	$(MAKE) npm
	cd $(PKG) && ./node_modules/.bin/tsc --noEmit
	cd $(PKG) && "$(BUN)" test

# The OTLP decoder the OpenTelemetry tests check the export with (tests/otel.rs): the
# OpenTelemetry project's own protobuf definitions, from PyPI, into target/otlp-python.
OTLP_PROTO_VERSION := 1.45.2
otlp-python:
	@[ -d target/otlp-python/opentelemetry/proto ] || python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target target/otlp-python "opentelemetry-proto==$(OTLP_PROTO_VERSION)"

# Bun runs the TypeScript client's tests. When none is on PATH, the pinned version is installed
# from the npm registry into target/tools (the `bun` package carries this platform's binary), so
# `make test` needs nothing on a fresh machine but Node's npm beside the Rust toolchain.
BUN_VERSION := 1.4.5
BUN ?= $(or $(shell command -v bun 2>/dev/null),$(CURDIR)/target/tools/bin/bun)
bun:
	@[ -x "$(BUN)" ] || npm install --global --prefix "$(CURDIR)/target/tools" --allow-scripts=bun "bun@$(BUN_VERSION)"
	@"$(BUN)" --version >/dev/null

# The TypeScript client (packages/levelcode-hooks): its dev dependencies, as its lock file says.
PKG := packages/levelcode-hooks
package-deps: bun
	cd $(PKG) && "$(BUN)" install --frozen-lockfile

# npm packages like esbuild's and biome's: this machine's platform package (the static binary
# only) and the main package (the client and the `levelcode-hooks` shim), packed into target/npm/.
npm: static package-deps
	"$(BUN)" $(PKG)/scripts/npm.ts --binary $(RELEASE_BIN) --out target/npm

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

install: static
	install -d $(PREFIX)/bin
	install -m 0755 $(RELEASE_BIN) $(PREFIX)/bin/levelcode-hooks

example: build
	bash fixtures/example/run.sh

bench: package-deps otlp-python
	bash benches/run.sh
	bash benches/serve.sh
	$(MAKE) static
	bash benches/organisations.sh
	LEVELCODE_HOOKS_BINARY=$(RELEASE_BIN) "$(BUN)" benches/client.mts

# Fuzzing (cargo-fuzz, nightly): each target for FUZZ_SECONDS; crashes land in fuzz/artifacts/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = payload settings

.PHONY: fuzz soak

fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cargo +nightly fuzz build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p fuzz/corpus/$$t; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		cargo +nightly fuzz run $$t fuzz/corpus/$$t fuzz/seeds/$$t -- \
			-max_total_time=$(FUZZ_SECONDS) -timeout=10 -dict=fuzz/json.dict || exit 1; \
	done

# 2,000 random dispatches (SOAK_RUNS, SOAK_WORKERS, SOAK_SEED): no process left, no growth.
soak:
	$(CARGO) test --test soak -- --ignored --nocapture
