# nxcc — plain make. `make` builds build/nxcc and build/libnxcc.a.
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

LIB_DIRS := ir ir/hlo ir/verify ir/eval passes backend backend/target backend/gpsimd runtime-stub compiler
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

test: all unit
	@BUILD=$(BUILD) sh tests/run.sh

# Layering rules (tools/check_layers.sh); tests/run.sh runs it as a test group.
check-layers: all
	@sh tools/check_layers.sh $(BUILD)

asan:
	@rm -rf build-asan/sanitizer-logs; mkdir -p build-asan/sanitizer-logs
	ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/build-asan/sanitizer-logs/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/build-asan/sanitizer-logs/ubsan \
	$(MAKE) BUILD=build-asan OPT="-O1 -g" SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test
	@# A report from a child whose failure a test expected still counts.
	@if ls build-asan/sanitizer-logs/* >/dev/null 2>&1; then head -n 40 build-asan/sanitizer-logs/*; \
	  echo "asan: sanitizer reports in build-asan/sanitizer-logs"; exit 1; fi

bench: all
	@BUILD=$(BUILD) sh bench/run.sh

# Simulated time / roofline per example graph and -O level (bench/lower.sh).
bench-lower: all
	@BUILD=$(BUILD) sh bench/lower.sh
.PHONY: bench-lower

fuzz:
	@sh tests/fuzz/run.sh

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all unit deps demo test check-layers asan bench fuzz clean
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
fuzz: fuzz-build
.PHONY: fuzz-build

# Evaluator matmul benchmark (bench/bench_eval_dot.c).
$(BUILD)/bench/bench_eval_dot: bench/bench_eval_dot.c $(BUILD)/libnxcc.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libnxcc.a $(LDLIBS)
bench: $(BUILD)/bench/bench_eval_dot
