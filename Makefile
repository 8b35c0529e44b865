# rdpipe - build the library, the tools and the unit tests.
#   make                 bin/rdsend bin/rdrecv ... and lib/librdpipe.a (in build/)
#   make SAN=1           the same with ASan+UBSan, into build-san/ (binaries in build-san/bin)
#   make TSAN=1          the same with ThreadSanitizer, into build-tsan/
#   make CC=clang        any C11 compiler
#   make test            the whole suite (tests/run)
#   make install PREFIX=/usr/local   tools, man pages, bash completion (DESTDIR too)
#   make deb             build-deb/rdpipe_VERSION_ARCH.deb (debhelper; lintian)
#   make man             lint the man pages (mandoc -T lint)
CC      ?= cc
PREFIX  ?= /usr/local
SAN     ?= 0
TSAN    ?= 0
V       ?= 0
ifeq ($(V),0)
  Q := @
  say = @printf '  %-4s %s\n' $(1) $(2);
else
  Q :=
  say =
endif

ifeq ($(SAN),1)
  OUT      ?= build-san
  BINDIR   ?= $(OUT)/bin
  SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(TSAN),1)
  OUT      ?= build-tsan
  BINDIR   ?= $(OUT)/bin
  SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
  OUT      ?= build
  BINDIR   ?= bin
  SANFLAGS :=
endif

CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -pthread $(SANFLAGS)
CPPFLAGS += -Ilib -D_GNU_SOURCE -D_FORTIFY_SOURCE=2   # as distributions build: ignored results of checked calls fail here too
LDLIBS  += -lrdmacm -libverbs -lcrypto -lgcrypt -lsodium -lzstd -lxxhash -lnuma -lunistring -pthread
LDFLAGS += $(SANFLAGS)

# --version names the commit: git describe at build time, "unknown" outside a git tree (a
# copy without .git, as the package build has, gets it through RD_COMMIT=...). Only
# rd_version.o sees it; the stamp rebuilds that one object when the commit changes.
ifeq ($(origin RD_COMMIT),undefined)
  RD_COMMIT := $(if $(wildcard .git),$(shell git describe --always --tags 2>/dev/null),)
endif
RD_COMMIT := $(or $(RD_COMMIT),unknown)

LIB_SRC   := $(wildcard lib/*/*.c)
LIB_OBJ   := $(LIB_SRC:lib/%.c=$(OUT)/lib/%.o)
LIB_A     := $(OUT)/librdpipe.a
TOOLS     := $(patsubst tools/%.c,%,$(wildcard tools/*.c))
TOOL_BINS := $(TOOLS:%=$(BINDIR)/%)
# unit tests mirror lib/'s layers (tests/unit/wire/test_tag.c tests lib/wire/rd_tag.c); their
# shared helpers (the in-memory transport, check.h) sit in tests/unit/ itself
UNIT_SRC  := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(foreach s,$(UNIT_SRC),$(OUT)/tests/$(basename $(notdir $(s))))
UNIT_HELP := $(wildcard tests/unit/*.c)

all: $(TOOL_BINS) $(LIB_A) $(UNIT_BINS)

# only the four tools (what the package build needs)
tools: $(TOOL_BINS)

$(OUT)/lib/%.o: lib/%.c $(wildcard lib/*/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(OUT)/lib/run/rd_version.o: CPPFLAGS += -DRD_COMMIT='"$(RD_COMMIT)"'
$(OUT)/lib/run/rd_version.o: $(OUT)/commit.stamp
$(OUT)/commit.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(RD_COMMIT)' | cmp -s - $@ || echo '$(RD_COMMIT)' > $@

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)$(AR) rcs $@ $^

$(BINDIR)/%: tools/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

define unit_rule
$(OUT)/tests/$(basename $(notdir $(1))): $(1) $(UNIT_HELP) $(wildcard tests/unit/*.h) $(LIB_A)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)$$(CC) $$(CPPFLAGS) -Itests/unit $$(CFLAGS) $$(LDFLAGS) -o $$@ $$< $$(UNIT_HELP) $$(LIB_A) $$(LDLIBS)
endef
$(foreach s,$(UNIT_SRC),$(eval $(call unit_rule,$(s))))

test: all
	tests/run

# make install: what users use, nothing else: the tools, their man pages, bash completion
# (completion/rdpipe for rdsend, rdrecv, rdpipe and rdcp, completion/rdbench for rdbench and
# rdcheck; bash-completion loads a file by command name, hence the links).
MANDIR     ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
MAN_PAGES  := $(wildcard man/*.1)

install: $(TOOL_BINS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 completion/rdpipe $(DESTDIR)$(BASHCOMPDIR)/rdpipe
	install -m 644 completion/rdbench $(DESTDIR)$(BASHCOMPDIR)/rdbench
	for t in $(filter-out rdpipe rdbench rdcheck,$(TOOLS)); do ln -sf rdpipe $(DESTDIR)$(BASHCOMPDIR)/$$t; done
	ln -sf rdbench $(DESTDIR)$(BASHCOMPDIR)/rdcheck

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(PREFIX)/bin/%) $(TOOLS:%=$(DESTDIR)$(BASHCOMPDIR)/%)
	rm -f $(MAN_PAGES:man/%=$(DESTDIR)$(MANDIR)/man1/%)

# make man: the man pages must stay clean under mandoc's linter (tests/integration/manpages.sh
# checks it too, with the options against each tool's --help)
man:
	mandoc -T lint -W warning $(MAN_PAGES)

# make deb: build-deb/rdpipe_*.deb, built with debhelper in a copy of the tree (the source
# tree stays clean), then checked with lintian
deb:
	RD_COMMIT='$(RD_COMMIT)' scripts/build-deb.sh

clean:
	rm -rf build build-san bin build-deb

FORCE:

# libFuzzer targets (tests/fuzz/fuzz_*.c): make fuzz -> build-fuzz/
-include tests/fuzz/fuzz.mk

.PHONY: all tools test install uninstall man deb clean FORCE

# make bench: $(OUT)/bench/engine, the send and receive engines in one process over the
# pass-by-pointer loop transport (bench/engine.sh runs it)
BENCH_BINS := $(patsubst bench/%.c,$(OUT)/bench/%,$(wildcard bench/*.c))

bench: $(BENCH_BINS)

# engine reads each thread's CPU time as it exits, through a wrapper of pthread_create (not
# in LDFLAGS, which a command line may replace)
BENCH_LINK_engine := -Wl,--wrap=pthread_create

$(OUT)/bench/%: bench/%.c $(wildcard lib/*/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(BENCH_LINK_$*) -o $@ $< $(LIB_A) $(LDLIBS)

.PHONY: bench
