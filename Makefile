# securitykey: build, test, demo, fuzz, bench.
# `make demo` and `make test` work on a fresh Debian/Ubuntu machine: both install what is
# missing first (`make deps`).

SHELL := /bin/bash
SWIFT ?= swift
SWIFTC ?= swiftc
SWIFT_BUILD_FLAGS := --explicit-target-dependency-import-check error
PREFIX ?= /usr/local
DESTDIR ?=
FUZZ_SECONDS ?= 60
VENV := .venv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages, in three lists: what building needs, what running needs (the package's
# Depends), and what the tests, the demo and the benchmarks need on top. QEMU, busybox, cpio
# and kmod run the real-hidraw tests in a guest (scripts/hidvm); fido2-tools is libfido2, a
# host they check against; libfido2-dev and valgrind build and measure the benchmark's libfido2
# host; dbus-daemon, systemd (busctl) and libglib2.0-bin (gdbus) drive the daemon's tests;
# debootstrap, lintian and fakeroot check the Debian package (make test-packaging); pamtester
# and libpam-u2f (pam_u2f.so, pamu2fcfg) check the PAM module; prometheus (and promtool) and
# prometheus-node-exporter scrape `fleet --openmetrics` (Tests/CLITests/FleetPrometheusTests,
# which asks Prometheus' HTTP API with curl).
BUILD_PACKAGES := pkg-config libhidapi-dev libpcsclite-dev libudev-dev zlib1g-dev libsystemd-dev libcurl4-openssl-dev \
	libssl-dev libpam0g-dev
RUNTIME_PACKAGES := libhidapi-hidraw0 libpcsclite1 libudev1 zlib1g libsystemd0 libcurl4 pcscd publicsuffix libssl3 libpam0g
TEST_PACKAGES := vsmartcard-vpcd dbus-daemon systemd libglib2.0-bin openssl python3-venv python3-dev \
	swig util-linux iproute2 qemu-system-x86 busybox-static cpio kmod fido2-tools libfido2-dev valgrind \
	debootstrap lintian fakeroot openssh-client openssh-server pamtester libpam-u2f \
	prometheus prometheus-node-exporter curl
APT_PACKAGES := $(BUILD_PACKAGES) $(RUNTIME_PACKAGES) $(TEST_PACKAGES)

.PHONY: all deps deps-build pydeps build build-tests test test-packaging release shared-library ssh-provider pam-module print-pamdir install-files deb uninstall docs demo fuzz fuzz-coverage fuzz-corpus bench bench-build bench-report bench-drivers bench-smoke bench-callgrind bench-hidraw bench-ssh bench-load size-report format install clean help

all: build

help:
	@echo "make demo    build, start a virtual key, register and sign in with it, verify"
	@echo "make test    install deps, build, run every test"
	@echo "make bench   [BENCH_ARGS='-n 1000'] ours vs python-fido2 (vs libfido2) on virtual keys, fleet, micro"
	@echo "make bench-report   run the benchmark and write Docs/Performance.md"
	@echo "make bench-drivers | bench-smoke | bench-callgrind | bench-hidraw   libfido2 host, instructions, hidraw"
	@echo "make bench-ssh   [SSH_BENCH_RUNS=5] OpenSSH through our provider vs the built-in one (QEMU guest), load time"
	@echo "make bench-load  [LOAD_REQUESTS=10000 LOAD_CLI=1000 ...] daemon, CLI, ssh under load and a soak; writes Docs/Performance.md"
	@echo "make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS='cbor tpm']   each libFuzzer target for N seconds"
	@echo "make fuzz-coverage   line coverage of each target's parser files over its corpus (llvm-cov); fails under FUZZ_COVERAGE_MIN=95 %"
	@echo "make fuzz-corpus     minimize what make fuzz grew, the seeds and Fuzz/Corpus into Fuzz/Corpus (commit it)"
	@echo "make docs    DocC documentation of the library products in .build/docs"
	@echo "make ssh-provider | pam-module   the shared library and its front ends in .build/install: OpenSSH's"
	@echo "             security-key provider (lib/securitykey/libsecuritykey-sk.so), the PAM module, the programs"
	@echo "make size-report   each installed artifact's size and largest parts into Docs/Performance.md"
	@echo "make build | format | install [PREFIX=] | deps"

# Installs missing Debian packages ($(1)); a quick no-op when everything is there.
define apt_install
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v $(SWIFT) >/dev/null || { echo "deps: no Swift toolchain on PATH (swift.org/install)"; exit 1; }
endef

# Everything: building, running, testing.
deps:
	$(call apt_install,$(APT_PACKAGES))

# Only what building and running need (make install, make deb).
deps-build:
	$(call apt_install,$(BUILD_PACKAGES) $(RUNTIME_PACKAGES))

# python-fido2 and pyscard, the independent implementation the tests check against.
pydeps: deps $(VENV)/.stamp
$(VENV)/.stamp: scripts/requirements-test.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
	touch $@

# The debug build that make build, test and demo (and scripts/hidvm/test-uhid.sh) use: without
# debug information, which only a debugger reads. Without it and the index store the modules up
# to VirtualAuthenticator took a fifth less CPU (217 s against 277 s); the index store has to
# stay, as SwiftPM reads it to list the XCTest cases of the test bundle (there are none, but the
# step fails without the store). The binaries, which the QEMU guest reads over 9p, are a
# fraction of the size. Failures still name file and line (Swift Testing records them in the
# test), and traps name the function. A plain `swift build --build-tests` (for lldb) builds the
# same modules with other flags, so the next make test compiles them again.
DEBUG_BUILD_FLAGS := $(SWIFT_BUILD_FLAGS) -Xswiftc -gnone -Xcc -g0

build: deps
	$(SWIFT) build $(DEBUG_BUILD_FLAGS)

# The suite's build: the test bundle, the programs, and the man page generator ManPageTests runs.
build-tests: deps
	$(SWIFT) build $(DEBUG_BUILD_FLAGS) --build-tests
	$(SWIFT) build $(DEBUG_BUILD_FLAGS) --product generate-manual

# The tests that need pcscd run inside a private PC/SC test bed (scripts/pcsc-testbed.sh);
# python-fido2 in .venv is the independent implementation they check against. The packaging
# checks (make test-packaging) run after the suite, whether it passed or not, unless
# SECURITYKEY_SKIP_PACKAGING=1 (scripts/test.sh). The status is the suite's failure, else theirs.
test: deps pydeps build-tests
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 scripts/test.sh

# Builds the CLI, serves a virtual key in a private PC/SC bed (over UDP for a user without root,
# saying why), registers, signs in, verifies,
# and stops everything it started (scripts/demo.sh).
demo: deps
	$(SWIFT) build $(DEBUG_BUILD_FLAGS) --product securitykey
	SECURITYKEY_BIN="$$($(SWIFT) build --show-bin-path)/securitykey" scripts/demo.sh

# libFuzzer targets, one per parser of untrusted bytes (Docs/Fuzzing.md); crashes land in
# Tests/FuzzTargetsTests/Regressions/TARGET/, which `make test` replays.
FUZZ_TARGETS ?=
fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-coverage: deps
	scripts/fuzz-coverage.sh $(FUZZ_TARGETS)

fuzz-corpus: deps
	scripts/fuzz-corpus.sh $(FUZZ_TARGETS)

# Release builds of the benchmark and the CLI it serves virtual keys with, and the libfido2
# driver; python-fido2 and libfido2 are the other hosts. The PC/SC part starts a
# private test bed, which needs root. Built with `make release`'s flags (the Swift runtime
# linked in), so the two builds share their compiled modules; the CLI measured is SwiftPM's
# static link of them (.build/release/securitykey), the same code the shared library holds
# (scripts/bench/footprint.sh measures the installed layout, .build/install).
BENCH_ARGS ?=
bench-build: deps pydeps bench-drivers
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey-bench

bench: bench-build
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 .build/release/securitykey-bench $(BENCH_ARGS)

bench-report: bench-build
	@$(MAKE) --no-print-directory ssh-provider
	SECURITYKEY_PYTHON=$(CURDIR)/$(VENV)/bin/python3 scripts/bench/report.sh $(BENCH_ARGS)

# The libfido2 host of the benchmark (bench/libfido2/fido2-udp-driver.c): CTAPHID over UDP or hidraw.
CC ?= cc
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror
bench-drivers: .build/bench/fido2-udp-driver .build/bench/sk-load .build/bench/pam-load
.build/bench/fido2-udp-driver: bench/libfido2/fido2-udp-driver.c
	@command -v pkg-config >/dev/null && pkg-config --exists libfido2 || $(MAKE) deps
	mkdir -p .build/bench
	$(CC) $(BENCH_CFLAGS) -o $@ $< $$(pkg-config --cflags --libs libfido2)

# Loads an OpenSSH provider library as ssh-sk-helper does and times it (bench/openssh/sk-load.c);
# the packaging test runs it in the chroot too.
.build/bench/sk-load: bench/openssh/sk-load.c bench/load-measure.h
	mkdir -p .build/bench
	$(CC) $(BENCH_CFLAGS) -o $@ $< -ldl

# Loads a PAM module as Linux-PAM does, calls it, and closes it again (bench/pam/pam-load.c).
.build/bench/pam-load: bench/pam/pam-load.c bench/load-measure.h
	mkdir -p .build/bench
	$(CC) $(BENCH_CFLAGS) -o $@ $< -ldl

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

# OpenSSH (ssh-keygen enrolment, ssh login) through our provider vs the built-in one on the same
# uhid key in the QEMU guest, and the provider's load-to-first-call time; the shipped builds
# (make release's). Writes its section of Docs/Performance.md (scripts/bench/ssh-report.sh).
SSH_BENCH_RUNS ?= 5
bench-ssh: deps .build/bench/sk-load
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey
	@$(MAKE) --no-print-directory ssh-provider
	SSH_BENCH_RUNS=$(SSH_BENCH_RUNS) scripts/bench/ssh-report.sh

# Load and soak (issue 32): securitykeyd with many D-Bus clients on UDP and PC/SC virtual keys,
# `securitykey authenticate` processes in a row, `ssh` logins through the provider, an in-process
# soak; every count is a LOAD_* variable (scripts/bench/load-report.sh; LOAD_WRITE=0 only prints).
# Writes its section of Docs/Performance.md. Needs root (pcscd's bed, sshd).
bench-load: deps pydeps
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykeyd
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey-bench
	@$(MAKE) --no-print-directory ssh-provider
	scripts/bench/load-report.sh

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Package.swift

# What is installed (issue 30's layout): one shared library, libsecuritykey.so.0 in
# $(PREFIX)/lib/securitykey, holds all of the code (our modules, the packages they use, and the
# Swift runtime linked in statically, every symbol of it local), and the four things a user runs
# or loads are thin C front ends that link it (packaging/library): `securitykey` and
# `securitykeyd` (main), OpenSSH's provider libsecuritykey-sk.so (sk_*) and the PAM module
# pam_securitykey.so (pam_sm_*). `make release` builds, links and stages them once, with the man
# pages and shell completions generated from the argument parser; `make install-files` copies
# them (with any PREFIX) without building, with udev rules and the daemon's systemd user and
# system units, D-Bus session and system service files and system bus policy, pointing at
# $(PREFIX)/bin. Everything
# installed is listed in INSTALLED, which `make uninstall` removes and nothing else.
UDEVDIR ?= /etc/udev/rules.d
# --no-export-dynamic: the static runtime's link arguments export every symbol of our modules
# from the executables, which keeps them all from --gc-sections and fills the dynamic symbol
# table (2.4 MB of the CLI); nothing looks them up (issue 30).
# -gnone, -g0: what is installed is stripped, so the debug information SwiftPM compiles into a
# release build by default only costs build time. Every function (and C datum) in a section of
# its own: --gc-sections then drops unused functions one by one, not only whole files (1.3 MB of
# the library), and lld can lay out the functions the common commands run side by side
# (packaging/library/hot-symbols.txt, below).
RELEASE_FLAGS := -c release --static-swift-stdlib -Xlinker --no-export-dynamic -Xswiftc -gnone -Xcc -g0 \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcc -fdata-sections $(SWIFT_BUILD_FLAGS)
STAGE := .build/install
BINDIR := $(PREFIX)/bin
MANDIR := $(PREFIX)/share/man/man1
MAN7DIR := $(PREFIX)/share/man/man7
SKDIR := $(PREFIX)/lib/securitykey
# The staged tree (make release): bin/ and lib/securitykey/ as installed, so each front end finds
# the library by the RUNPATH it has installed; the benchmarks load these files.
SHARED_LIBRARY := $(STAGE)/lib/securitykey/libsecuritykey.so.0
SK_PROVIDER := $(STAGE)/lib/securitykey/libsecuritykey-sk.so
PAM_MODULE := $(STAGE)/lib/securitykey/pam_securitykey.so
MAN8DIR := $(PREFIX)/share/man/man8
# The system's PAM module directory (Debian: /lib/MULTIARCH/security), whatever PREFIX is: PAM
# loads modules named without a path from there only.
PAMDIR ?= $(shell pkg-config --variable=libdir pam 2>/dev/null || echo /lib/$$(gcc -print-multiarch 2>/dev/null))/security
INSTALLED = $(BINDIR)/securitykey $(BINDIR)/securitykeyd $(SKDIR)/libsecuritykey.so.0 \
	$(SKDIR)/libsecuritykey-sk.so $(MAN7DIR)/securitykey-sk.7 \
	$(PAMDIR)/pam_securitykey.so $(MAN8DIR)/pam_securitykey.8 \
	$(PREFIX)/share/bash-completion/completions/securitykey \
	$(PREFIX)/share/zsh/site-functions/_securitykey \
	$(PREFIX)/share/fish/vendor_completions.d/securitykey.fish \
	$(UDEVDIR)/70-securitykey.rules \
	$(PREFIX)/lib/systemd/user/securitykeyd.service \
	$(PREFIX)/lib/systemd/system/securitykeyd.service \
	$(PREFIX)/lib/systemd/system/securitykey-fleet.service $(PREFIX)/lib/systemd/system/securitykey-fleet.timer \
	$(PREFIX)/share/securitykey/prometheus/securitykey-rules.yml \
	$(PREFIX)/share/dbus-1/services/org.securitykey.Daemon1.service \
	$(PREFIX)/share/dbus-1/system-services/org.securitykey.Daemon1.service \
	$(PREFIX)/share/dbus-1/system.d/org.securitykey.Daemon1.conf \
	$(PREFIX)/share/dbus-1/interfaces/org.securitykey.Daemon1.xml \
	$(PREFIX)/lib/systemd/user/securitykey-mds-update.service \
	$(PREFIX)/lib/systemd/user/securitykey-mds-update.timer \
	$(PREFIX)/lib/systemd/system/securitykey-mds-update.service \
	$(PREFIX)/lib/systemd/system/securitykey-mds-update.timer

release: deps-build
	@$(MAKE) --no-print-directory shared-library
	# With the release flags too: under other flags SwiftPM would compile the argument parser and
	# everything over it again, at every make release.
	$(SWIFT) build $(RELEASE_FLAGS) --product generate-manual
	rm -rf $(STAGE)/man && mkdir -p $(STAGE)/man
	"$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/generate-manual" $(STAGE)/bin/securitykey --multi-page \
	  --output-directory $(STAGE)/man
	# The real exit-status table in place of the generator's generic EXIT STATUS section.
	scripts/man-exit-status.sh $(STAGE)/bin/securitykey $(STAGE)/man
	"$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)/generate-manual" $(STAGE)/bin/securitykeyd \
	  --output-directory $(STAGE)/man
	# mdoc treats an empty line as an error (groff warns); the generator leaves some in.
	sed -i '/^$$/d' $(STAGE)/man/*.1
	# A completion file is sourced, not run: no #! line.
	$(STAGE)/bin/securitykey --generate-completion-script bash | sed '1{/^#!/d}' > $(STAGE)/securitykey.bash
	$(STAGE)/bin/securitykey --generate-completion-script zsh > $(STAGE)/_securitykey
	$(STAGE)/bin/securitykey --generate-completion-script fish > $(STAGE)/securitykey.fish

# libsecuritykey.so.0 and its four front ends, staged in $(STAGE)/bin and $(STAGE)/lib/securitykey.
# SwiftPM compiles every module once with the release flags and lists each product's objects
# (it links the two programs statically as a by-product, .build/release/securitykey, which the
# benchmarks serve virtual keys with; its own link of the two C libraries may fail, as it looks
# for the static runtime among the shared ones, and is not used). The library is linked from the
# union of the four lists by swiftc -static-stdlib with lld: --gc-sections from the entry points
# packaging/library/exports.map exports (every other symbol local, so the runtime in it never
# clashes with a host's); OpenSSH's and PAM's entry points exported under a securitykey_ prefix
# (--defsym), which the front ends call under their own names; -z nodelete, so that a host's
# dlclose of the provider or the PAM module leaves the runtime and its threads in place; packed
# relative relocations (DT_RELR, glibc 2.36) where the C library has them, 1.6 MB less to read at
# every start; -z defs, so a missing object fails the link instead of the load. Both programs'
# modules define the thunk that starts their async main under one name, not qualified by the
# module ($sIetH_...10async_MainTf3npf_n, weak): in one library the linker would keep one of the
# two, and securitykeyd would run securitykey's main; each program's object is linked from a copy
# in which those symbols are local. Every Swift object is linked from such a copy
# (libsecuritykey.objects), without its unwind tables (.eh_frame): Swift code never unwinds (an
# error is a return value, a trap ends the process, and the runtime's backtracer walks frame
# pointers, which Swift keeps), and they were 2.3 MB of the library. The one unwinding that
# crosses Swift frames is the main thread's pthread_exit in dispatch_main, a forced unwind: it
# stops at the first frame it has no table for and ends the thread all the same, as it would at
# main. The C and C++ objects (BoringSSL, the runtime's) keep theirs. The functions
# packaging/library/hot-symbols.txt names (scripts/hot-symbols.sh lists those the common commands,
# the daemon, OpenSSH's provider and the PAM module run, in the order they first run) come first
# in .text: the kernel maps a library's file pages 64 kB at a time around each fault, so code
# spread over the whole 16 MB of .text made every process resident in most of it (issue 30's
# memory targets; a name the build no longer has is skipped). The unstripped library
# stays in the build directory (scripts/size-report.sh reads its symbols).
SHARED_PRODUCTS := securitykey securitykeyd securitykey-sk pam_securitykey
SHARED_ENTRIES := sk_api_version sk_enroll sk_sign sk_load_resident_keys pam_sm_authenticate pam_sm_setcred
RELR := $(shell getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ split($$2, v, "."); if (v[1] > 2 || v[2] >= 36) print "yes" }')
SHARED_LINK_FLAGS := -use-ld=lld -Xlinker --gc-sections -Xlinker -z -Xlinker defs -Xlinker -z -Xlinker nodelete \
	-Xlinker -z -Xlinker now -Xlinker --version-script=packaging/library/exports.map \
	$(if $(RELR),-Xlinker -z -Xlinker pack-relative-relocs) \
	-Xlinker --symbol-ordering-file=packaging/library/hot-symbols.txt -Xlinker --no-warn-symbol-ordering \
	$(foreach entry,$(SHARED_ENTRIES),-Xlinker --defsym=securitykey_$(entry)=$(entry))
# The front ends: a main() or the entry points of OpenSSH's or PAM's API, each calling the library.
FRONT_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror -fstack-protector-strong
# libc named even where a front end calls nothing of it (Debian links --as-needed; lintian wants
# every library linked against libc).
FRONT_LINK = -L$(dir $(SHARED_LIBRARY)) -l:libsecuritykey.so.0 -Wl,-z,relro,-z,now -Wl,--push-state,--no-as-needed -lc -Wl,--pop-state
shared-library: deps-build
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykey
	$(SWIFT) build $(RELEASE_FLAGS) --product securitykeyd
	$(SWIFT) build $(RELEASE_FLAGS) --target SecurityKeySK
	$(SWIFT) build $(RELEASE_FLAGS) --target SecurityKeyPAM
	-@$(SWIFT) build $(RELEASE_FLAGS) --product securitykey-sk >/dev/null 2>&1
	-@$(SWIFT) build $(RELEASE_FLAGS) --product pam_securitykey >/dev/null 2>&1
	bin="$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)"; \
	for product in $(SHARED_PRODUCTS); do \
	  test -s "$$bin/$$product.product/Objects.LinkFileList" || { echo "$$product: SwiftPM listed no objects" >&2; exit 1; }; \
	done; \
	sort -u $(foreach product,$(SHARED_PRODUCTS),"$$bin/$(product).product/Objects.LinkFileList") \
	  > "$$bin/libsecuritykey.LinkFileList" && \
	rm -rf "$$bin/libsecuritykey.entries" "$$bin/libsecuritykey.objects" && mkdir -p "$$bin/libsecuritykey.objects" && \
	tr -d "'" < "$$bin/libsecuritykey.LinkFileList" | while IFS= read -r object; do \
	  case "$$object" in \
	    *.swift.o) \
	      copy="$$bin/libsecuritykey.objects/$$(basename "$$(dirname "$$object")")-$$(basename "$$object")"; \
	      localize=; case "$$object" in */securitykey.build/*|*/securitykeyd.build/*) localize='*async_Main*';; esac; \
	      objcopy --remove-section=.eh_frame --remove-section=.rela.eh_frame \
	        $${localize:+--wildcard "--localize-symbol=$$localize"} "$$object" "$$copy" && echo "'$$copy'" || exit 1;; \
	    *) echo "'$$object'";; \
	  esac; \
	done > "$$bin/libsecuritykey.LinkFileList.new" && \
	mv "$$bin/libsecuritykey.LinkFileList.new" "$$bin/libsecuritykey.LinkFileList" && \
	$(SWIFTC) -emit-library -static-stdlib -module-name securitykey_shared -o "$$bin/libsecuritykey.so.0.unstripped" \
	  @"$$bin/libsecuritykey.LinkFileList" -L "$$bin" -Xlinker -soname=libsecuritykey.so.0 $(SHARED_LINK_FLAGS) && \
	rm -rf $(STAGE)/bin $(STAGE)/lib && mkdir -p $(STAGE)/bin $(dir $(SHARED_LIBRARY)) && \
	strip --strip-unneeded -o $(SHARED_LIBRARY) "$$bin/libsecuritykey.so.0.unstripped"
	$(CC) $(FRONT_CFLAGS) -DSECURITYKEY_ENTRY=securitykey_main -o $(STAGE)/bin/securitykey packaging/library/main.c \
	  $(FRONT_LINK) -Wl,-rpath,'$$ORIGIN/../lib/securitykey'
	$(CC) $(FRONT_CFLAGS) -DSECURITYKEY_ENTRY=securitykeyd_main -o $(STAGE)/bin/securitykeyd packaging/library/main.c \
	  $(FRONT_LINK) -Wl,-rpath,'$$ORIGIN/../lib/securitykey'
	$(CC) $(FRONT_CFLAGS) -shared -fPIC -I Sources/CSSHSecurityKeyAPI -o $(SK_PROVIDER) packaging/library/sk.c \
	  $(FRONT_LINK) -Wl,--version-script=Sources/SecurityKeySK/exports.map -Wl,-rpath,'$$ORIGIN'
	$(call pam_front_end,$(PAM_MODULE),$$ORIGIN)
	strip --strip-unneeded $(STAGE)/bin/securitykey $(STAGE)/bin/securitykeyd $(SK_PROVIDER)
	@for f in $(SHARED_LIBRARY) $(STAGE)/bin/securitykey $(STAGE)/bin/securitykeyd $(SK_PROVIDER) $(PAM_MODULE); do \
	  if ldd $$f | grep -E "libswift|Foundation|not found"; then echo "$$f needs the Swift runtime or a missing library" >&2; exit 1; fi; \
	done

# The PAM module's front end into $(1), finding the library in $(2) (RUNPATH). Installed, that is
# $(SKDIR) by its absolute name: setuid hosts such as sudo and su ignore an $$ORIGIN-relative one.
define pam_front_end
	$(CC) $(FRONT_CFLAGS) -shared -fPIC -o $(1) packaging/library/pam.c \
	  $(FRONT_LINK) -Wl,--version-script=Sources/SecurityKeyPAM/exports.map -Wl,-rpath,'$(2)'
	strip --strip-unneeded $(1)
endef

# OpenSSH's provider library, $(SK_PROVIDER) (only OpenSSH's sk_* entry points exported,
# Sources/SecurityKeySK/exports.map), and the PAM module, $(PAM_MODULE) (pam_sm_authenticate and
# pam_sm_setcred; it loads into sudo, login, display managers): both front ends of the shared
# library, which they need beside them.
ssh-provider pam-module: shared-library

install: release
	@$(MAKE) --no-print-directory install-files

# Installs what `make release` built and staged, without building (make deb and
# scripts/test-packaging.sh build once and install twice).
install-files:
	install -D -m 0755 $(STAGE)/bin/securitykey $(DESTDIR)$(BINDIR)/securitykey
	install -D -m 0755 $(STAGE)/bin/securitykeyd $(DESTDIR)$(BINDIR)/securitykeyd
	install -D -m 0644 $(SHARED_LIBRARY) $(DESTDIR)$(SKDIR)/libsecuritykey.so.0
	install -D -m 0644 $(SK_PROVIDER) $(DESTDIR)$(SKDIR)/libsecuritykey-sk.so
	install -d $(DESTDIR)$(MANDIR)
	install -m 0644 $(STAGE)/man/*.1 $(DESTDIR)$(MANDIR)/
	install -D -m 0644 packaging/man/securitykey-sk.7 $(DESTDIR)$(MAN7DIR)/securitykey-sk.7
	# The PAM module names $(SKDIR) itself (pam_front_end says why): linked here, for this PREFIX.
	install -d $(DESTDIR)$(PAMDIR)
	$(call pam_front_end,$(DESTDIR)$(PAMDIR)/pam_securitykey.so,$(SKDIR))
	chmod 0644 $(DESTDIR)$(PAMDIR)/pam_securitykey.so
	install -D -m 0644 packaging/man/pam_securitykey.8 $(DESTDIR)$(MAN8DIR)/pam_securitykey.8
	install -D -m 0644 $(STAGE)/securitykey.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/securitykey
	install -D -m 0644 $(STAGE)/_securitykey $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_securitykey
	install -D -m 0644 $(STAGE)/securitykey.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/securitykey.fish
	install -D -m 0644 udev/70-securitykey.rules $(DESTDIR)$(UDEVDIR)/70-securitykey.rules
	# The units and the D-Bus service files name the binary where this PREFIX puts it.
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/user $(DESTDIR)$(PREFIX)/lib/systemd/system \
	  $(DESTDIR)$(PREFIX)/share/dbus-1/services $(DESTDIR)$(PREFIX)/share/dbus-1/system-services
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/securitykeyd.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/securitykeyd.service
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/securitykeyd-system.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykeyd.service
	sed 's|/usr/local/bin|$(BINDIR)|g' dbus/org.securitykey.Daemon1.service \
	  > $(DESTDIR)$(PREFIX)/share/dbus-1/services/org.securitykey.Daemon1.service
	sed 's|/usr/local/bin|$(BINDIR)|g' dbus/system/org.securitykey.Daemon1.service \
	  > $(DESTDIR)$(PREFIX)/share/dbus-1/system-services/org.securitykey.Daemon1.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/user/securitykeyd.service \
	  $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykeyd.service \
	  $(DESTDIR)$(PREFIX)/share/dbus-1/services/org.securitykey.Daemon1.service \
	  $(DESTDIR)$(PREFIX)/share/dbus-1/system-services/org.securitykey.Daemon1.service
	install -D -m 0644 dbus/org.securitykey.Daemon1.conf $(DESTDIR)$(PREFIX)/share/dbus-1/system.d/org.securitykey.Daemon1.conf
	install -D -m 0644 dbus/org.securitykey.Daemon1.xml $(DESTDIR)$(PREFIX)/share/dbus-1/interfaces/org.securitykey.Daemon1.xml
	# The fleet inventory for Prometheus: its service and timer (Docs/Fleet.md) and the alert rules.
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/securitykey-fleet.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-fleet.service
	install -m 0644 systemd/securitykey-fleet.timer $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-fleet.timer
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-fleet.service
	install -D -m 0644 prometheus/securitykey-rules.yml $(DESTDIR)$(PREFIX)/share/securitykey/prometheus/securitykey-rules.yml
	# The MDS cache refresh (mds update --if-due): a user and a system service, one timer for both.
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/securitykey-mds-update.service > $(DESTDIR)$(PREFIX)/lib/systemd/user/securitykey-mds-update.service
	sed 's|/usr/local/bin|$(BINDIR)|g' systemd/securitykey-mds-update-system.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-mds-update.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/user/securitykey-mds-update.service $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-mds-update.service
	install -m 0644 systemd/securitykey-mds-update.timer $(DESTDIR)$(PREFIX)/lib/systemd/user/securitykey-mds-update.timer
	install -m 0644 systemd/securitykey-mds-update.timer $(DESTDIR)$(PREFIX)/lib/systemd/system/securitykey-mds-update.timer
	@echo "install: reload udev rules with: sudo udevadm control --reload-rules && sudo udevadm trigger"

# The PAM module directory install-files uses (scripts/make-deb.sh checks the package has it).
print-pamdir:
	@echo $(PAMDIR)

# Removes exactly what `make install` put there (same PREFIX, DESTDIR and UDEVDIR).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	rm -f $(DESTDIR)$(MANDIR)/securitykey.1 $(DESTDIR)$(MANDIR)/securitykey.*.1 $(DESTDIR)$(MANDIR)/securitykeyd.1

# Each shipped artifact's size (stripped, as installed), the whole installation's and the
# package's, against issue 30's targets, with each artifact's largest sections and modules:
# printed and written into Docs/Performance.md ("## Artifact sizes"). make test-packaging fails
# when one is over (scripts/size-report.sh check).
size-report: release
	scripts/size-report.sh report

# A Debian package of the same files (scripts/make-deb.sh): dpkg-deb, Depends on the runtime
# libraries and publicsuffix, checked with lintian.
deb: release
	scripts/make-deb.sh

# The package built, linted, installed into a debootstrap chroot and used there (a register and
# sign-in against a virtual key); `make install` into a scratch DESTDIR and `make uninstall`
# leaving nothing; a separate package depending on this one by path, using only products.
test-packaging: deps
	scripts/test-packaging.sh

# DocC documentation of the library products, one archive per target in .build/docs (open with
# `docc preview` or serve statically). swift-docc-plugin is a dependency only when
# SECURITYKEY_DOCC=1 (Package.swift says why); any DocC warning, such as a link in a catalog
# that does not resolve, fails the target. It builds with make build's flags, so after make build
# or make test it compiles nothing again (with SwiftPM's default flags it compiled the documented
# modules and their dependencies again, over make test's objects: 170 s against 45 s).
DOCC_TARGETS ?= SecurityKeys
docs: deps-build
	@mkdir -p .build/docs
	@for target in $(DOCC_TARGETS); do \
	  echo "docs: $$target -> .build/docs/$$target.doccarchive"; \
	  SECURITYKEY_DOCC=1 $(SWIFT) package $(DEBUG_BUILD_FLAGS) --allow-writing-to-directory .build/docs generate-documentation \
	    --target "$$target" --output-path ".build/docs/$$target.doccarchive" --disable-indexing \
	    --warnings-as-errors || exit 1; \
	done

clean:
	rm -rf .build $(VENV)
