# levelcode-hooks: build, test, lint, install, bench, fuzz, soak.
CARGO ?= cargo
PREFIX ?= $(HOME)/.local

.PHONY: build test lint install bench example

build:
	$(CARGO) build --release

test:
	$(CARGO) test --all-targets

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

install: build
	install -d $(PREFIX)/bin
	install -m 0755 target/release/levelcode-hooks $(PREFIX)/bin/levelcode-hooks

example: build
	bash fixtures/example/run.sh

bench:
	bash benches/run.sh
	bash benches/serve.sh

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
