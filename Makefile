# nxcc — plain make. `make` builds build/nxcc and build/libnxcc.a; `make shared`
# builds build/libnxcc.so from a separate set of -fPIC objects (build/pic/).
# BUILD=dir selects the output directory (make asan uses build-asan).
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
SAN     ?=
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Werror
CPPFLAGS += -D_GNU_SOURCE -I. -I$(BUILD)/gen
CFLAGS  += $(WARN) $(OPT) $(SAN)
LDLIBS  += -lprotobuf-c -lcurl -lcrypto -lxxhash -lpthread -lm
LDFLAGS += $(SAN)
# LLVM 16 (GpSimd kernels: backend/gpsimd/ emits, runtime-stub JITs). Its
# headers come in with -isystem so that -Wpedantic -Werror stay on for ours.
# libLLVM is not linked: backend/target/llvm_api.c dlopens it on first use,
# so processes without GpSimd kernels do not pay for loading it.
LLVM_CONFIG ?= llvm-config-16
LLVM_CPPFLAGS := $(patsubst -I%,-isystem %,$(filter -I%,$(shell $(LLVM_CONFIG) --cflags)))
LLVM_LIBS := $(shell $(LLVM_CONFIG) --ldflags --libs)
CPPFLAGS += $(LLVM_CPPFLAGS) -DNX_LLVM_SO='"$(shell $(LLVM_CONFIG) --libdir)/libLLVM-16.so"'
LDLIBS  += -ldl

LIB_DIRS := ir ir/hlo ir/verify ir/eval passes backend backend/kernels backend/target backend/gpsimd runtime-stub compiler
LIB_SRC  := $(filter-out compiler/main.c,$(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
PROTO    := $(wildcard ir/hlo/*.proto)
GEN_SRC  := $(patsubst ir/%.proto,$(BUILD)/gen/ir/%.pb-c.c,$(PROTO))
LIB_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(GEN_SRC:.c=.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

all: $(BUILD)/nxcc

# The build id: a hash of every source the compiler is built from. It is part
# of the compile-cache key, so a rebuilt compiler never gets another build's
# .neff back from the cache. The header is rewritten only when the id changes.
BUILD_ID := $(shell cat Makefile $(sort $(LIB_SRC) compiler/main.c $(PROTO) $(wildcard $(addsuffix /*.h,$(LIB_DIRS)) $(addsuffix /*.def,$(LIB_DIRS)))) | sha256sum | cut -c1-16)
$(BUILD)/gen/nx_build_id.h: FORCE
	@mkdir -p $(dir $@)
	@echo '#define NX_BUILD_ID "$(BUILD_ID)"' > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@
	@rm -f $@.tmp
$(BUILD)/obj/compiler/flags.o $(BUILD)/obj/compiler/main.o: $(BUILD)/gen/nx_build_id.h
FORCE:

$(BUILD)/nxcc: $(BUILD)/obj/compiler/main.o $(BUILD)/libnxcc.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libnxcc.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/%.o: %.c $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# Generated protobuf-c code is compiled without -Wpedantic -Werror: it is not ours.
$(BUILD)/gen/ir/%.pb-c.c: ir/%.proto
	@mkdir -p $(dir $@)
	protoc-c --c_out=$(BUILD)/gen $<

$(BUILD)/gen/ir/%.pb-c.o: $(BUILD)/gen/ir/%.pb-c.c
	$(CC) $(CPPFLAGS) -std=c11 $(OPT) $(SAN) -w -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.h $(BUILD)/libnxcc.a $(BUILD)/gen/nx_build_id.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a -lcmocka $(LDLIBS)

unit: $(UNIT_BIN)
# test_gpsimd builds LLVM IR itself (the library loads LLVM at run time)
$(BUILD)/tests/test_gpsimd: LDLIBS += $(LLVM_LIBS)

deps:
	@sh tools/deps.sh

# The README demo: compile the MLP training step for trn1, run it on the
# simulated NeuronCore, and check it against the reference evaluator.
demo: all
	$(BUILD)/nxcc compile examples/mlp_step.hlo --framework XLA --target trn1 -O2 --no-cache --output $(BUILD)/mlp_step.neff
	$(BUILD)/nxcc inspect $(BUILD)/mlp_step.neff
	$(BUILD)/nxcc run $(BUILD)/mlp_step.neff --random-inputs 1 --output-dir $(BUILD)/demo-out
	$(BUILD)/nxcc check examples/mlp_step.hlo --target trn1 -O2 --random-inputs 1

test: all unit shared $(BUILD)/fuzz/diff_inproc
	@BUILD=$(BUILD) sh tests/run.sh

# Layering rules (tools/check_layers.sh); tests/run.sh runs it as a test group.
check-layers: all
	@sh tools/check_layers.sh $(BUILD)

asan:
	@rm -rf build-asan/sanitizer-logs; mkdir -p build-asan/sanitizer-logs
	@# intercept_tls_get_addr=0: LeakSanitizer's tracer crashes scanning the
	@# dynamic TLS of dlopen'ed libLLVM ("DTLS ... Tracer caught signal 11");
	@# leaks are still detected.
	ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0:log_path=$(CURDIR)/build-asan/sanitizer-logs/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer-logs/ubsan \
	$(MAKE) BUILD=build-asan OPT="-O1 -g" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test
	@# A report from a child whose failure a test expected still counts.
	@if ls build-asan/sanitizer-logs/* >/dev/null 2>&1; then head -n 40 build-asan/sanitizer-logs/*; \
	  echo "asan: sanitizer reports in build-asan/sanitizer-logs"; exit 1; fi

# The whole compile matrix, tests/e2e/compile_corpus.sh on its own: every
# corpus graph (torch-neuronx and JAX) at trn1/trn2 x -O1/-O2/-O3 (~1 min).
corpus-matrix: all
	@NXCC=$(CURDIR)/$(BUILD)/nxcc NX_BUILD=$(CURDIR)/$(BUILD) NX_ROOT=$(CURDIR) \
	  NX_CORPUS=$${NX_CORPUS:-$(CURDIR)/../shared/corpus} sh tests/e2e/compile_corpus.sh
.PHONY: corpus-matrix

bench: all
	@BUILD=$(BUILD) sh bench/run.sh

# Code quality against the roofline: bench/kernels/*.hlo and the torch-neuronx
# corpus graphs that compile (trn1 -O2, nxcc run --timing-only); see
# docs/benchmarks.md. BENCH_MD=FILE also writes the table as Markdown.
bench-roofline: all
	@python3 bench/roofline.py --nxcc $(BUILD)/nxcc $(if $(BENCH_MD),--markdown $(BENCH_MD)) \
	  bench/kernels/*.hlo $(wildcard $(or $(NX_CORPUS),../shared/corpus)/hlo/torch-neuronx/*.hlo)
.PHONY: bench-roofline

# Simulated time / roofline per example graph and -O level (bench/lower.sh).
bench-lower: all
	@BUILD=$(BUILD) sh bench/lower.sh
.PHONY: bench-lower

fuzz:
	@sh tests/fuzz/run.sh

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all unit deps demo test check-layers asan bench fuzz clean shared install uninstall
.SECONDARY: $(GEN_SRC)
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# Reader throughput benchmark (bench/bench_reader.c).
$(BUILD)/bench/bench_reader: bench/bench_reader.c $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
bench: $(BUILD)/bench/bench_reader

# libFuzzer targets (tests/fuzz/fuzz_*.c, bodies in tests/fuzz/harness.h):
# clang with ASan+UBSan, library built with fuzzer coverage in build-fuzz.
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build-fuzz/fuzz/%,$(FUZZ_SRC) tests/fuzz/gen_seeds.c)
fuzz-build:
	$(MAKE) BUILD=build-fuzz CC=clang OPT="-O1 -g" SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZ_BIN)
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/harness.h $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
$(BUILD)/fuzz/gen_seeds: tests/fuzz/gen_seeds.c tests/unit/neff_prog.h $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
fuzz: fuzz-build $(BUILD)/fuzz/diff_inproc
.PHONY: fuzz-build

# The differential campaign in one process (tests/fuzz/diff_inproc.c): random
# modules from tests/fuzz/gen_hlo.py through eval, opt -O1/-O2/-O3 and the
# simulated device, FUZZ_MODULES (default 10000) from FUZZ_SEED (default 1).
$(BUILD)/fuzz/diff_inproc: tests/fuzz/diff_inproc.c $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
fuzz-diff: $(BUILD)/fuzz/diff_inproc
	@mkdir -p build-fuzz/diff
	python3 tests/fuzz/gen_hlo.py --batch $(or $(FUZZ_SEED),1) $(or $(FUZZ_MODULES),10000) | \
	  $(BUILD)/fuzz/diff_inproc build-fuzz/diff
.PHONY: fuzz-diff

# Evaluator matmul benchmark (bench/bench_eval_dot.c).
$(BUILD)/bench/bench_eval_dot: bench/bench_eval_dot.c $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
bench: $(BUILD)/bench/bench_eval_dot

# The shared library: the same sources as libnxcc.a compiled with -fPIC into
# build/pic/ (the normal objects stay as they are), exporting only the
# public nxcc_* interface (include/nxcc.h, tools/libnxcc.map).
PIC_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC)) $(patsubst $(BUILD)/gen/%.c,$(BUILD)/pic/gen/%.o,$(GEN_SRC))
NX_VERSION := $(shell sed -n 's/^#define NX_VERSION "\(.*\)"/\1/p' ir/ir.h)
SONAME := libnxcc.so.$(firstword $(subst ., ,$(NX_VERSION)))
shared: $(BUILD)/libnxcc.so
$(BUILD)/libnxcc.so: $(PIC_OBJ) tools/libnxcc.map
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=tools/libnxcc.map $(LDFLAGS) -o $@ $(PIC_OBJ) $(LDLIBS)
$(BUILD)/pic/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c11 $(OPT) $(SAN) -fPIC -w -c -o $@ $<
$(BUILD)/pic/%.o: %.c $(GEN_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -MMD -MP -c -o $@ $<
$(BUILD)/pic/compiler/flags.o: $(BUILD)/gen/nx_build_id.h
-include $(shell find $(BUILD)/pic -name '*.d' 2>/dev/null)

# make install [PREFIX=/usr/local] [DESTDIR=...]: the nxcc binary, libnxcc.so
# and libnxcc.a, include/nxcc.h, nxcc.pc, the man page nxcc.1 and the bash
# completion, and the Neuron tool names as symlinks to nxcc (argv[0] picks
# the mode: docs/cli.md).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
COMPDIR    ?= $(PREFIX)/share/bash-completion/completions
INSTALL    ?= install
install: all shared $(BUILD)/nxcc.pc
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(COMPDIR)
	$(INSTALL) -m 755 $(BUILD)/nxcc $(DESTDIR)$(BINDIR)/nxcc
	$(INSTALL) -m 755 $(BUILD)/libnxcc.so $(DESTDIR)$(LIBDIR)/libnxcc.so.$(NX_VERSION)
	ln -sf libnxcc.so.$(NX_VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libnxcc.so
	$(INSTALL) -m 644 $(BUILD)/libnxcc.a $(DESTDIR)$(LIBDIR)/libnxcc.a
	$(INSTALL) -m 644 include/nxcc.h $(DESTDIR)$(INCLUDEDIR)/nxcc.h
	$(INSTALL) -m 644 $(BUILD)/nxcc.pc $(DESTDIR)$(LIBDIR)/pkgconfig/nxcc.pc
	$(INSTALL) -m 644 docs/nxcc.1 $(DESTDIR)$(MANDIR)/man1/nxcc.1
	$(INSTALL) -m 644 tools/nxcc.bash-completion $(DESTDIR)$(COMPDIR)/nxcc
	$(MAKE) --no-print-directory install-links
install-links:
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	ln -sf nxcc $(DESTDIR)$(BINDIR)/neuronx-cc
	ln -sf nxcc $(DESTDIR)$(BINDIR)/neuron_parallel_compile
$(BUILD)/nxcc.pc: tools/nxcc.pc.in ir/ir.h
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(NX_VERSION)|' $< > $@
.PHONY: $(BUILD)/nxcc.pc
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/nxcc $(DESTDIR)$(LIBDIR)/libnxcc.so $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libnxcc.so.$(NX_VERSION) $(DESTDIR)$(LIBDIR)/libnxcc.a \
		$(DESTDIR)$(INCLUDEDIR)/nxcc.h $(DESTDIR)$(LIBDIR)/pkgconfig/nxcc.pc $(DESTDIR)$(MANDIR)/man1/nxcc.1 \
		$(DESTDIR)$(COMPDIR)/nxcc $(DESTDIR)$(BINDIR)/neuronx-cc $(DESTDIR)$(BINDIR)/neuron_parallel_compile
.PHONY: install install-links uninstall shared
