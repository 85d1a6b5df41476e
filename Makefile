# smelt — build, run the example, test.
#   make          libsmelt (static + shared) and the smelt tool
#   make run      build, then run the bundled example
#   make test     build, then every test (unit, sanitizers, conformance, models)
#   make bench    benchmarks against onnxruntime (bench-full: and the real-model corpus)
#   make fuzz     libFuzzer targets (clang) in build-fuzz/, each run for FUZZ_SECONDS (default 60)
#   make install  PREFIX=/usr/local (and DESTDIR): header, libraries, the tool, smelt.pc;
#   make uninstall removes exactly those
# Both `run` and `test` install missing system packages first (scripts/deps.sh).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
CFLAGS_COMMON = -std=c11 -Wall -Wextra -Werror -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L \
                -Iinclude -Isrc -I$(BUILD)/gen -fPIC -fvisibility=hidden
CFLAGS  = $(CFLAGS_COMMON) $(OPT) $(EXTRA_CFLAGS)
LDLIBS  = -lprotobuf-c -ldl -lpthread -lm

# The version, from the public header (the one place it is written).
VERSION := $(shell sed -n 's/^\#define SMELT_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' include/smelt.h | paste -sd.)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))
SONAME  := libsmelt.so.$(MAJOR)
PREFIX  ?= /usr/local
DESTDIR ?=

PROTO_SRC := $(firstword $(wildcard /usr/include/onnx/onnx.proto /usr/local/include/onnx/onnx.proto))
GEN_C   := $(BUILD)/gen/onnx/onnx.pb-c.c
GEN_H   := $(BUILD)/gen/onnx/onnx.pb-c.h

SRCS    := $(sort $(wildcard src/*/*.c))
OBJS    := $(SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/onnx/onnx.pb-c.o
TEST_SRCS := $(sort $(wildcard tests/unit/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o)

.PHONY: all deps run test unit bench bench-full clean install uninstall fuzz fuzz-build
all: $(BUILD)/libsmelt.a $(BUILD)/libsmelt.so $(BUILD)/smelt $(BUILD)/nvrtc_check

deps:
	@scripts/deps.sh

$(GEN_C) $(GEN_H) &: $(PROTO_SRC)
	@test -n "$(PROTO_SRC)" || { echo "onnx.proto not found: run scripts/deps.sh (libonnx-dev)"; exit 1; }
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen -I$(dir $(PROTO_SRC)).. onnx/onnx.proto

# Generated code is not ours to lint.
$(BUILD)/gen/onnx/onnx.pb-c.o: $(GEN_C)
	$(CC) -std=c11 -fPIC -fvisibility=hidden $(OPT) -w -I$(BUILD)/gen -c $< -o $@

# kir/mathf.inc, less its header comment, as a C string for the C emitter's prelude
# (the interpreter includes the file itself).
$(BUILD)/gen/mathf_src.h: src/kir/mathf.inc
	@mkdir -p $(dir $@)
	{ echo 'static const char mathf_src[] ='; \
	  sed -e '1,/^ \*\/$$/d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@

$(BUILD)/%.o: %.c $(GEN_H) $(BUILD)/gen/mathf_src.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libsmelt.a: $(OBJS)
	rm -f $@ && ar rcs $@ $^

# The real file carries the full version, the soname the major one; libsmelt.so is for linking.
$(BUILD)/libsmelt.so: $(OBJS)
	$(CC) -shared -Wl,-soname,$(SONAME) -o $(BUILD)/libsmelt.so.$(VERSION) $^ $(LDLIBS)
	ln -sf libsmelt.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf libsmelt.so.$(VERSION) $@

$(BUILD)/smelt: $(BUILD)/tools/smelt.o $(BUILD)/tools/cli_check.o $(BUILD)/tools/cli_bench.o $(BUILD)/libsmelt.a
	$(CC) -o $@ $^ $(LDLIBS)

# Compiles emitted CUDA C with NVRTC for sm_90 and sm_80 (scripts/test.sh, no GPU needed).
$(BUILD)/nvrtc_check: $(BUILD)/tools/nvrtc_check.o $(BUILD)/libsmelt.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/unit_tests: $(TEST_OBJS) $(BUILD)/libsmelt.a
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/embed: $(BUILD)/examples/embed.o $(BUILD)/libsmelt.a
	$(CC) -o $@ $^ $(LDLIBS)

# Compiles and runs one model from several threads at once (scripts/test.sh builds it with
# -fsanitize=thread into build-tsan/).
$(BUILD)/tsan_concurrent: $(BUILD)/tests/tsan/concurrent.o $(BUILD)/libsmelt.a
	$(CC) -o $@ $^ $(LDLIBS)

# libFuzzer targets (tests/fuzz/): $(FUZZ_BUILD) holds the library built with coverage
# instrumentation, ASan and UBSan (every UBSan finding aborts), and the two targets. (clang warns
# about positional initializers that leave trailing fields zero, which gcc accepts and we use.)
FUZZ_BUILD   = build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_CC      = clang -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# Per input: 10 s, 2 GiB resident, no single allocation above 1 GiB.
FUZZ_FLAGS   = -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1
FUZZ_TARGETS = fuzz_model fuzz_tensor

$(BUILD)/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/libsmelt.a
	$(CC) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# The targets' objects are kept (not intermediates), so a rebuild relinks only.
.SECONDARY: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/tests/fuzz/%.o)

fuzz-build:
	@env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL $(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) \
	    CC="$(FUZZ_CC)" OPT="-O1 -g" EXTRA_CFLAGS=-Wno-missing-field-initializers $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%)

# Each target from its seed corpus (tests/fuzz/corpus_*, read-only) with its dictionary
# (tests/fuzz/TARGET.dict) if any; new inputs go to $(FUZZ_BUILD)/corpus_*, a crash to
# $(FUZZ_BUILD)/crash-*.
fuzz: fuzz-build
	@rc=0; for t in model tensor; do \
	    mkdir -p $(FUZZ_BUILD)/corpus_$$t; \
	    echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	    dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	    UBSAN_OPTIONS=print_stacktrace=1 $(FUZZ_BUILD)/fuzz_$$t $(FUZZ_FLAGS) $$dict -max_total_time=$(FUZZ_SECONDS) \
	        -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus_$$t tests/fuzz/corpus_$$t || rc=1; \
	done; exit $$rc

unit: $(BUILD)/unit_tests
	$(BUILD)/unit_tests

run: deps
	@$(MAKE) --no-print-directory all $(BUILD)/embed
	$(BUILD)/embed examples/digits_mlp.onnx examples/digits_test.npy examples/digits_test_labels.npy

test: deps
	@$(MAKE) --no-print-directory all $(BUILD)/unit_tests $(BUILD)/embed
	@scripts/test.sh

bench: deps
	@$(MAKE) --no-print-directory all
	@scripts/bench.sh

bench-full: deps
	@$(MAKE) --no-print-directory all
	@SMELT_BENCH_SETS=small,full,real scripts/bench.sh

LIBDIR := $(DESTDIR)$(PREFIX)/lib
install: all
	install -d $(DESTDIR)$(PREFIX)/include $(LIBDIR)/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/smelt.h $(DESTDIR)$(PREFIX)/include/smelt.h
	install -m 644 $(BUILD)/libsmelt.a $(LIBDIR)/libsmelt.a
	install -m 755 $(BUILD)/libsmelt.so.$(VERSION) $(LIBDIR)/libsmelt.so.$(VERSION)
	ln -sf libsmelt.so.$(VERSION) $(LIBDIR)/$(SONAME)
	ln -sf libsmelt.so.$(VERSION) $(LIBDIR)/libsmelt.so
	install -m 755 $(BUILD)/smelt $(DESTDIR)$(PREFIX)/bin/smelt
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' smelt.pc.in > $(LIBDIR)/pkgconfig/smelt.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/smelt.h $(LIBDIR)/libsmelt.a $(LIBDIR)/libsmelt.so.$(VERSION) \
	      $(LIBDIR)/$(SONAME) $(LIBDIR)/libsmelt.so $(LIBDIR)/pkgconfig/smelt.pc $(DESTDIR)$(PREFIX)/bin/smelt

clean:
	rm -rf $(BUILD) build-asan build-tsan $(FUZZ_BUILD)

-include $(OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/tools/smelt.d $(BUILD)/tools/cli_check.d $(BUILD)/tools/cli_bench.d $(BUILD)/tools/nvrtc_check.d
