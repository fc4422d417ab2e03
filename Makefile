# kvcon: build, test, install.  `make run` and `make check` are the two set-up commands (see README.md).
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
# Two executables, each with its modules (directories of src/; one both use is in both lists) and its libraries:
# kvcon (the console, the CLI, the dashboard: a client of clusters and of the engine service, whose API alone it
# reaches) and kvcon-engine (the engine service: the engine, the API server, libvirt's and the archive's
# libraries), installed beside kvcon, which starts it (src/service/service.c). tests/needed.sh checks that kvcon
# needs none of the engine's libraries.
KVCON_MODULES  = core model kube service console ui cmd
ENGINE_MODULES = core model kube service engine apiserver
# libvncclient: its header only; kvcon opens it when a VNC session starts (src/console/vnc.c), so that it and the
# libraries it alone brings are not mapped by every run (issue 28)
KVCON_PKGS  = ncursesw libcurl json-c vterm yaml-0.1 zlib libcrypto
KVCON_DLPKGS = libvncclient
ENGINE_PKGS = libcurl json-c yaml-0.1 zlib libvirt libvirt-qemu libxml-2.0 libarchive libcrypto libmicrohttpd
PKGS     = $(sort $(KVCON_PKGS) $(KVCON_DLPKGS) $(ENGINE_PKGS))
WARN     = -Wall -Wextra -Wshadow -Wformat=2 -Werror
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
LIBS     = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
# no -lm: libm's IFUNC resolvers alone cost kvcon 0.3 MiB of resident pages on every run (issue 28)
KVCON_LIBS  = $(shell pkg-config --libs $(KVCON_PKGS) 2>/dev/null) -lpthread
ENGINE_LIBS = $(shell pkg-config --libs $(ENGINE_PKGS) 2>/dev/null) -lpthread -lm

SRC      = $(wildcard src/*/*.c)
OBJ      = $(SRC:%.c=$(BUILD)/%.o)
LIBOBJ   = $(OBJ)
modobj   = $(patsubst %.c,$(BUILD)/%.o,$(foreach m,$(1),$(wildcard src/$(m)/*.c)))
KVCON_OBJ  = $(call modobj,$(KVCON_MODULES))
ENGINE_OBJ = $(call modobj,$(ENGINE_MODULES))
MAINOBJ  = $(BUILD)/src/main.o
ENGINE_MAINOBJ = $(BUILD)/src/engine_main.o
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC = $(wildcard tests/fuzz/fuzz_*.c)
REPLAY_BIN = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/replay/%)

.PHONY: all tests-built run check unit e2e bench asan fuzz install install-unit clean deps deps-build cleanroom

BIN     ?= kvcon
ENGINE_BIN = $(patsubst ./%,%,$(dir $(BIN))kvcon-engine)
# run, check and asan compile with one job per core (CI has two): the build is a minute of a serial run's time
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)

all: $(BIN) $(ENGINE_BIN)

# everything the test runners run, built in parallel by check, unit and asan before they run it serially
tests-built: all $(UNIT_BIN) $(REPLAY_BIN)

# System prerequisites (scripts/deps.sh, silent when nothing is missing): `make all` needs only the build packages,
# `make run` the run-time ones too, `make check` everything a test uses. Every object waits for the build ones, so
# `make -j` never compiles before they are there.
deps-build:
	@./scripts/deps.sh build
$(OBJ) $(MAINOBJ) $(ENGINE_MAINOBJ): | deps-build

deps:
	@./scripts/deps.sh check

# each links an archive of its own modules only (a call across the boundary is a link error, not a library pulled
# in) with its own libraries; libkvcon.a (every module) is the tests'
$(BIN): $(MAINOBJ) $(BUILD)/libkvcon-cli.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(MAINOBJ) $(BUILD)/libkvcon-cli.a $(KVCON_LIBS)

$(ENGINE_BIN): $(ENGINE_MAINOBJ) $(BUILD)/libkvcon-engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(ENGINE_MAINOBJ) $(BUILD)/libkvcon-engine.a $(ENGINE_LIBS)

$(BUILD)/libkvcon-cli.a: $(KVCON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libkvcon-engine.a: $(ENGINE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libkvcon.a: $(LIBOBJ)
	@rm -f $@
	ar rcs $@ $(LIBOBJ)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# the unit tests' shared fixture helpers (tests/unit/fixture.h), linked into each unit test
UNIT_HELPERS = $(BUILD)/tests/fixture.o
$(BUILD)/tests/fixture.o: tests/unit/fixture.c tests/unit/fixture.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkvcon.a tests/unit/t.h $(UNIT_HELPERS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(UNIT_HELPERS) $(BUILD)/libkvcon.a $(LIBS)

# Starts kvcon on its out-of-the-box default: libvirt's embedded QEMU driver with a demo VM.
run:
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@./scripts/deps.sh run
	@./scripts/run-demo.sh

# Every fuzz harness's corpus (tests/fuzz/corpus/NAME/) replayed, plus deterministic mutations, without libFuzzer.
$(BUILD)/replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(BUILD)/libkvcon.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/fuzz/replay.c $(BUILD)/libkvcon.a $(LIBS)

# Each runner ends with `N passed, N failed, N skipped` (tests/counts.sh); with KVCON_STRICT=1 a skip fails.
# tests/check-exports.sh: no src/ object exports what nothing else uses (nm over the objects, well under a second).
# tests/layers.sh: no include cycle between the layers of src/.
# tests/needed.sh: kvcon needs none of the engine's libraries (readelf -d).
RUN_UNIT = KVCON_BIN=$(CURDIR)/$(BIN) ./tests/run-unit.sh ./tests/layers.sh ./tests/needed.sh $(UNIT_BIN); u=$$?; ./tests/check-exports.sh $(BUILD); x=$$?; \
	./tests/run-replay.sh $(REPLAY_BIN) && [ $$u = 0 ] && [ $$x = 0 ]
RUN_E2E  = KVCON_BIN=$(CURDIR)/$(BIN) KVCON_BUILD=$(CURDIR)/$(BUILD) KVCON_CFLAGS="$(CFLAGS)" KVCON_LIBS="$(LIBS)" \
	./tests/run-e2e.sh

unit:
	@$(MAKE) --no-print-directory -j$(JOBS) tests-built
	@$(RUN_UNIT)

e2e: all
	@./scripts/deps.sh check
	@$(RUN_E2E)

# unit then e2e (both, even when the first fails), then the total as the last line. As root, where deps.sh installs
# every tool a test uses, a skip is a failure unless KVCON_STRICT=0 says otherwise.
check:
	@$(MAKE) --no-print-directory -j$(JOBS) tests-built
	@./scripts/deps.sh check
	@rm -f $(BUILD)/check.counts; \
	export KVCON_COUNTS=$(CURDIR)/$(BUILD)/check.counts; \
	[ -n "$${KVCON_STRICT:-}" ] || [ "$$(id -u)" != 0 ] || export KVCON_STRICT=1; \
	( $(RUN_UNIT) ); ( $(RUN_E2E) ); ./tests/summary.sh $$KVCON_COUNTS

# tests/cleanroom.sh: the README's two commands in a fresh minimal Debian 12 root (root, a few minutes).
cleanroom:
	@./tests/cleanroom.sh

# The whole test suite again with AddressSanitizer and UndefinedBehaviorSanitizer, but for two things, both said
# here: the chaos test runs fewer trials (each op x target pair once, each kind of migrate kill once;
# tests/e2e/engine_chaos.sh says why): under the sanitizers the trials hunt memory errors on those paths, the plain
# run's counts prove durability. And the scripts that run no kvcon code (the fake cluster's own tests in Python,
# the lab's self-test of its scripts, QEMU and libvirt) are omitted: the sanitizers have nothing of kvcon's there.
# Both executables are built with the sanitizers (build-asan/kvcon and the build-asan/kvcon-engine it starts).
SAN = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_CHAOS = CHAOS_TRIALS=16 CHAOS_MIG_TRIALS=3
ASAN_OMIT = ^tests/(e2e/fakekube_unit|e2e/fakekube_kubectl|lab/selftest)\.sh$$
asan:
	ASAN_OPTIONS=detect_leaks=0 $(ASAN_CHAOS) E2E_OMIT='$(ASAN_OMIT)' $(MAKE) --no-print-directory BUILD=build-asan BIN=build-asan/kvcon CFLAGS="$(SAN)" unit e2e

bench: all
	@./tests/run-bench.sh

FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer,address,undefined
# (clang warns about positional initializers that leave trailing members zero, which the code means)
fuzz:
	@./scripts/deps.sh fuzz
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -Wno-missing-field-initializers" \
		build-fuzz/libkvcon.a
	@mkdir -p build-fuzz/fuzz
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "  FUZZ $$n"; \
	  clang -std=c11 -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(FUZZ_CFLAGS) \
	    -o build-fuzz/fuzz/$$n $$f build-fuzz/libkvcon.a $(LIBS) || exit 1; done

install: all install-unit
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/kvcon/themes
	install -m 755 kvcon $(DESTDIR)$(PREFIX)/bin/kvcon
	install -m 755 kvcon-engine $(DESTDIR)$(PREFIX)/bin/kvcon-engine
	install -m 644 man/kvcon.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvcon.1
	install -m 644 themes/* $(DESTDIR)$(PREFIX)/share/kvcon/themes/ 2>/dev/null || true

# the systemd user unit alone (tests/e2e/engine_unit.sh verifies what install writes)
install-unit:
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/user
	sed 's|@BINDIR@|$(PREFIX)/bin|' contrib/kvcon-engine.service.in >$(DESTDIR)$(PREFIX)/lib/systemd/user/kvcon-engine.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/user/kvcon-engine.service

clean:
	rm -rf $(BUILD) build-asan build-fuzz kvcon kvcon-engine

-include $(OBJ:.o=.d) $(MAINOBJ:.o=.d) $(ENGINE_MAINOBJ:.o=.d) $(UNIT_BIN:=.d)
