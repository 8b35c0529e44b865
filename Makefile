# rdpipe - build the library, the tools and the unit tests.
#   make                 bin/rdsend bin/rdrecv ... and lib/librdpipe.a (in build/)
#   make SAN=1           the same with ASan+UBSan, into build-san/ (binaries in build-san/bin)
#   make CC=clang        any C11 compiler
#   make test            the whole suite (tests/run)
#   make install PREFIX=/usr/local
CC      ?= cc
PREFIX  ?= /usr/local
SAN     ?= 0
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
else
  OUT      ?= build
  BINDIR   ?= bin
  SANFLAGS :=
endif

CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -pthread $(SANFLAGS)
CPPFLAGS += -Ilib -D_GNU_SOURCE
LDLIBS  += -lrdmacm -libverbs -lcrypto -lzstd -lxxhash -pthread
LDFLAGS += $(SANFLAGS)

LIB_SRC   := $(wildcard lib/*.c)
LIB_OBJ   := $(LIB_SRC:lib/%.c=$(OUT)/lib/%.o)
LIB_A     := $(OUT)/librdpipe.a
TOOLS     := $(patsubst tools/%.c,%,$(wildcard tools/*.c))
TOOL_BINS := $(TOOLS:%=$(BINDIR)/%)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(OUT)/tests/%)
UNIT_HELP := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))

all: $(TOOL_BINS) $(LIB_A) $(UNIT_BINS)

$(OUT)/lib/%.o: lib/%.c $(wildcard lib/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)$(AR) rcs $@ $^

$(BINDIR)/%: tools/%.c $(LIB_A)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(OUT)/tests/%: tests/unit/%.c $(UNIT_HELP) $(wildcard tests/unit/*.h) $(LIB_A)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< $(UNIT_HELP) $(LIB_A) $(LDLIBS)

test: all
	tests/run

install: $(TOOL_BINS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/rdpipe
	install -m 755 $(TOOL_BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 lib/*.h $(DESTDIR)$(PREFIX)/include/rdpipe/

clean:
	rm -rf build build-san bin

.PHONY: all test install clean
