# kvcon: build, test, install.  `make run` and `make check` are the two set-up commands (see README.md).
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
CC      ?= cc
PKGS     = ncursesw libcurl json-c vterm libvncclient libvirt yaml-0.1 zlib libarchive libcrypto
WARN     = -Wall -Wextra -Wshadow -Wformat=2 -Werror
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -MMD -MP
LIBS     = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm

SRC      = $(wildcard src/*/*.c)
OBJ      = $(SRC:%.c=$(BUILD)/%.o)
LIBOBJ   = $(OBJ)
MAINOBJ  = $(BUILD)/src/main.o
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC = $(wildcard tests/fuzz/fuzz_*.c)
REPLAY_BIN = $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/replay/%)

.PHONY: all run check unit e2e bench asan fuzz install clean deps

BIN     ?= kvcon

all: $(BUILD)/.deps-ok $(BIN)

$(BUILD)/.deps-ok: scripts/deps.sh
	@./scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

deps:
	@./scripts/deps.sh

$(BIN): $(MAINOBJ) $(BUILD)/libkvcon.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(MAINOBJ) $(BUILD)/libkvcon.a $(LIBS)

$(BUILD)/libkvcon.a: $(LIBOBJ)
	@rm -f $@
	ar rcs $@ $(LIBOBJ)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkvcon.a tests/unit/t.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libkvcon.a $(LIBS)

# Starts kvcon on its out-of-the-box default: libvirt's embedded QEMU driver with a demo VM.
run: all
	@./scripts/run-demo.sh

# Every fuzz harness's corpus (tests/fuzz/corpus/NAME/) replayed, plus deterministic mutations, without libFuzzer.
$(BUILD)/replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(BUILD)/libkvcon.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/fuzz/replay.c $(BUILD)/libkvcon.a $(LIBS)

unit: all $(UNIT_BIN) $(REPLAY_BIN)
	@./tests/run-unit.sh $(UNIT_BIN)
	@./tests/run-replay.sh $(REPLAY_BIN)

e2e: all
	@KVCON_BIN=$(CURDIR)/$(BIN) KVCON_BUILD=$(CURDIR)/$(BUILD) KVCON_CFLAGS="$(CFLAGS)" KVCON_LIBS="$(LIBS)" \
		./tests/run-e2e.sh

check: all unit e2e

# The whole test suite again with AddressSanitizer and UndefinedBehaviorSanitizer.
SAN = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
asan:
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) --no-print-directory BUILD=build-asan BIN=build-asan/kvcon CFLAGS="$(SAN)" unit e2e

bench: all
	@./tests/run-bench.sh

FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer,address,undefined
fuzz: $(BUILD)/.deps-ok
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined" build-fuzz/libkvcon.a
	@mkdir -p build-fuzz/fuzz
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "  FUZZ $$n"; \
	  clang -std=c11 -D_GNU_SOURCE -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(FUZZ_CFLAGS) \
	    -o build-fuzz/fuzz/$$n $$f build-fuzz/libkvcon.a $(LIBS) || exit 1; done

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/kvcon/themes
	install -m 755 kvcon $(DESTDIR)$(PREFIX)/bin/kvcon
	install -m 644 man/kvcon.1 $(DESTDIR)$(PREFIX)/share/man/man1/kvcon.1
	install -m 644 themes/* $(DESTDIR)$(PREFIX)/share/kvcon/themes/ 2>/dev/null || true

clean:
	rm -rf $(BUILD) build-asan build-fuzz kvcon

-include $(OBJ:.o=.d)
