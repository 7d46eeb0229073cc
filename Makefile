# securitykey: build, test, demo, fuzz, bench.
# `make demo` and `make test` work on a fresh Debian/Ubuntu machine: both install what is
# missing first (`make deps`).

SHELL := /bin/bash
SWIFT ?= swift
SWIFT_BUILD_FLAGS := --explicit-target-dependency-import-check error
PREFIX ?= /usr/local
DESTDIR ?=
FUZZ_SECONDS ?= 60
VENV := .venv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the build, the tests and the demo need. QEMU, busybox, cpio and kmod run the
# real-hidraw tests in a guest (scripts/hidvm); fido2-tools is libfido2, a host they check against;
# libfido2-dev and valgrind build and measure the benchmark's libfido2 host (make bench-callgrind).
APT_PACKAGES := pkg-config libhidapi-dev libpcsclite-dev libudev-dev zlib1g-dev libsystemd-dev dbus-daemon systemd libglib2.0-bin pcscd vsmartcard-vpcd \
	openssl publicsuffix python3-venv python3-dev swig util-linux iproute2 \
	qemu-system-x86 busybox-static cpio kmod fido2-tools \
	libfido2-dev valgrind

.PHONY: all deps pydeps build test demo fuzz fuzz-coverage bench bench-build bench-report bench-drivers bench-smoke bench-callgrind bench-hidraw format install clean help

all: build

help:
	@echo "make demo    build, start a virtual key, register and sign in with it, verify"
	@echo "make test    install deps, build, run every test"
	@echo "make bench   [BENCH_ARGS='-n 1000'] ours vs python-fido2 (vs libfido2) on virtual keys, fleet, micro"
	@echo "make bench-report   run the benchmark and write Docs/Performance.md"
	@echo "make bench-drivers | bench-smoke | bench-callgrind | bench-hidraw   libfido2 host, instructions, hidraw"
	@echo "make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS='cbor tpm']   each libFuzzer target for N seconds"
	@echo "make fuzz-coverage   line coverage of each target's parser files over its corpus (llvm-cov)"
	@echo "make build | format | install [PREFIX=] | deps"

# Installs missing Debian packages; a quick no-op when everything is there.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "deps: no Swift toolchain on PATH (swift.org/install)"; exit 1; }

# python-fido2 and pyscard, the independent implementation the tests check against.
pydeps: deps $(VENV)/.stamp
$(VENV)/.stamp: scripts/requirements-test.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
	touch $@

build: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS)

# The tests that need pcscd run inside a private PC/SC test bed (scripts/pcsc-testbed.sh);
# python-fido2 in .venv is the independent implementation they check against.
test: deps pydeps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --build-tests
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 scripts/run-tests.sh

# Builds the CLI, serves a virtual key in a private PC/SC bed, registers, signs in, verifies,
# and stops everything it started (scripts/demo.sh).
demo: deps
	$(SWIFT) build $(SWIFT_BUILD_FLAGS) --product securitykey
	SECURITYKEY_BIN="$$($(SWIFT) build --show-bin-path)/securitykey" scripts/demo.sh

# libFuzzer targets, one per parser of untrusted bytes (Docs/Fuzzing.md); crashes land in
# Tests/FuzzTargetsTests/Regressions/TARGET/, which `make test` replays.
FUZZ_TARGETS ?=
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-coverage: deps
	scripts/fuzz-coverage.sh $(FUZZ_TARGETS)

# Release builds of the benchmark and the CLI it serves virtual keys with, and the libfido2
# driver; python-fido2 and libfido2 are the other hosts. The PC/SC part starts a
# private test bed, which needs root.
BENCH_ARGS ?=
bench-build: deps pydeps bench-drivers
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey-bench

bench: bench-build
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 .build/release/securitykey-bench $(BENCH_ARGS)

bench-report: bench-build
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 scripts/bench/report.sh $(BENCH_ARGS)

# The libfido2 host of the benchmark (bench/libfido2/fido2-udp-driver.c): CTAPHID over UDP or hidraw.
CC ?= cc
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror
bench-drivers: .build/bench/fido2-udp-driver
.build/bench/fido2-udp-driver: bench/libfido2/fido2-udp-driver.c
	@command -v pkg-config >/dev/null && pkg-config --exists libfido2 || $(MAKE) deps
	mkdir -p .build/bench
	$(CC) $(BENCH_CFLAGS) -o $@ $< $$(pkg-config --cflags --libs libfido2)

# The libfido2 host against a virtual key over UDP: ready, 3 verified ops of each kind, bad input.
bench-smoke: deps bench-drivers
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey
	bench/libfido2/smoke.sh

# Host CPU per operation in instructions (valgrind callgrind): ours, libfido2, python-fido2.
bench-callgrind: deps bench-drivers
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey-bench
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey
	scripts/bench/callgrind.sh

# Ours vs libfido2 over a real hidraw node, in the QEMU guest (relative numbers: emulated CPU).
bench-hidraw: deps bench-drivers
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey-bench
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey
	scripts/bench/hidraw-in-guest.sh

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Package.swift

# The binary, man pages and shell completions (generated from the argument parser), and the
# udev rules. PREFIX=/usr/local DESTDIR= by default; udev rules go to $(UDEVDIR).
UDEVDIR ?= /etc/udev/rules.d
install: deps
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS) --product securitykey
	$(SWIFT) package --allow-writing-to-package-directory generate-manual --product securitykey >/dev/null 2>&1 || \
	  $(SWIFT) build --product generate-manual
	rm -rf .build/man && mkdir -p .build/man
	"$$($(SWIFT) build --show-bin-path)/generate-manual-tool" .build/release/securitykey --multi-page \
	  --output-directory .build/man
	install -D -m 0755 .build/release/securitykey $(DESTDIR)$(PREFIX)/bin/securitykey
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 .build/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	.build/release/securitykey --generate-completion-script bash > .build/man/securitykey.bash
	.build/release/securitykey --generate-completion-script zsh > .build/man/_securitykey
	.build/release/securitykey --generate-completion-script fish > .build/man/securitykey.fish
	install -D -m 0644 .build/man/securitykey.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/securitykey
	install -D -m 0644 .build/man/_securitykey $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_securitykey
	install -D -m 0644 .build/man/securitykey.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/securitykey.fish
	install -D -m 0644 udev/70-securitykey.rules $(DESTDIR)$(UDEVDIR)/70-securitykey.rules
	@echo "install: reload udev rules with: sudo udevadm control --reload-rules && sudo udevadm trigger"

clean:
	rm -rf .build $(VENV)
