# tests/fuzz/fuzz.mk - libFuzzer targets, included by the top Makefile.
#   make fuzz         build-fuzz/fuzz_<name> for every tests/fuzz/fuzz_<name>.c
#   make fuzz-seeds   regenerate the committed seed corpora (tests/fuzz/corpus/<name>/)
#   make fuzz-clean   remove build-fuzz/ (grown bench corpora and findings included)
# The library is compiled again with coverage and ASan+UBSan into its own archive, so the
# targets see every parser instrumented; the normal build is not touched.
FUZZ_CC     ?= clang
FUZZ_OUT    ?= build-fuzz
FUZZ_CFLAGS ?= -std=gnu11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Wno-unused-parameter -pthread
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CPP    := -Ilib -Itests/fuzz -Itests/unit -D_GNU_SOURCE

FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_OUT)/%)
FUZZ_LIBOBJ := $(LIB_SRC:lib/%.c=$(FUZZ_OUT)/lib/%.o)
FUZZ_LIB_A  := $(FUZZ_OUT)/librdpipe-fuzz.a
# helpers the targets share (tests/fuzz/fz_*.c), compiled like the library
FUZZ_HELP   := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/help/%.o,$(wildcard tests/fuzz/fz_*.c))

fuzz: $(FUZZ_BINS)

$(FUZZ_OUT)/lib/%.o: lib/%.c $(wildcard lib/*/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(FUZZ_CC) $(FUZZ_CPP) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

$(FUZZ_OUT)/help/%.o: tests/fuzz/%.c $(wildcard tests/fuzz/*.h) $(wildcard lib/*/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(FUZZ_CC) $(FUZZ_CPP) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c -o $@ $<

$(FUZZ_LIB_A): $(FUZZ_LIBOBJ)
	@rm -f $@
	$(call say,AR,$@)$(AR) rcs $@ $^

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HELP) $(FUZZ_LIB_A) $(wildcard tests/fuzz/*.h)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CPP) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_HELP) $(FUZZ_LIB_A) $(LDLIBS)

# The seed generator writes valid messages with the library's own encoders, so the seeds
# follow the format when it changes. Plain ASan build: it has a main of its own.
$(FUZZ_OUT)/make-seeds: tests/fuzz/make-seeds.c $(FUZZ_HELP) $(FUZZ_LIB_A) $(wildcard tests/fuzz/*.h)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(FUZZ_CC) $(FUZZ_CPP) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -o $@ $< $(FUZZ_HELP) $(FUZZ_LIB_A) $(LDLIBS)

fuzz-seeds: $(FUZZ_OUT)/make-seeds
	$(FUZZ_OUT)/make-seeds tests/fuzz/corpus

fuzz-clean:
	rm -rf $(FUZZ_OUT)

.PHONY: fuzz fuzz-seeds fuzz-clean
