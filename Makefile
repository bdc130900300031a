# levelcode-hooks: build, test, lint, install, bench.
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
