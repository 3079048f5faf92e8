# kevo — top-level driver over CMake. `make` builds, `make test` runs the tests,
# `make demo` runs the demo; `make fuzz`, `make fuzz-smoke` and `make test-asan`
# are in the README's "Fuzzing and sanitizers". Every target first makes sure
# the Debian packages kevo needs are installed (scripts/setup.sh does nothing
# when they are).
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
# Extra cmake -D options for the configure step (scripts/without-cuda.sh adds
# -DKEVO_WITH_CUDA=OFF where it cannot hide the toolkit otherwise).
KEVO_CMAKE_ARGS ?=
# nvcc builds kevo-cuda-runner (the cuda target); found on PATH or in the
# toolkit's usual place. Without it kevo builds without the cuda runner.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)

# The libFuzzer targets (tests/fuzz) and the sanitized test suite each have a
# build directory of their own; see the README's "Fuzzing and sanitizers".
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
ASAN_BUILD ?= build-asan

.PHONY: all setup configure build test test-without-cuda test-asan fuzz fuzz-smoke demo clean \
        format tidy

all: build

setup:
	@scripts/setup.sh

$(BUILD)/CMakeCache.txt: | setup
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(if $(NVCC),-DCMAKE_CUDA_COMPILER=$(NVCC)) $(KEVO_CMAKE_ARGS)

configure: setup $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Chromium renders a report in one test; where it cannot be installed that
# test skips, saying why. The same holds for the test Slurm cluster, for the
# Python environment (torch, Triton) the triton target's tests run in, and for
# NumPy, which runs kevo's NKI model in the trainium tests.
test: build
	@scripts/setup.sh test-browser || echo "setup: chromium not installed; the report render test will skip" >&2
	@scripts/setup.sh test-slurm || echo "setup: slurm-wlm not installed; the slurm backend tests will skip" >&2
	@scripts/setup.sh test-triton || echo "setup: no torch/Triton environment; the triton target's run tests will skip" >&2
	@scripts/setup.sh test-trainium || echo "setup: python3-numpy not installed; the NKI model's tests will skip" >&2
	@scripts/setup.sh peers || echo "setup: no Kernel Tuner environment; the strategy benchmark's peer test will skip" >&2
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# make test as on a machine without the CUDA toolkit, in its own build
# directory: nvcc, ptxas and ncu hidden from the configure step, the build
# and the tests (scripts/without-cuda.sh says how). CI runs it after make test.
test-without-cuda:
	scripts/without-cuda.sh $(MAKE) test BUILD=$(BUILD)-nocuda

# make test in $(ASAN_BUILD), built with ASan and UBSan (g++, -O1 with line
# tables for the reports; any finding fails its test). kevo-runner stays
# unsanitized there (targets/CMakeLists.txt says why). Slow: not part of CI.
test-asan:
	$(MAKE) test BUILD=$(ASAN_BUILD) BUILD_TYPE=RelWithDebInfo \
	  KEVO_CMAKE_ARGS="-DKEVO_SANITIZE=ON -DKEVO_WITH_CUDA=OFF \
	    -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -g1' -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -g1' \
	    $(KEVO_CMAKE_ARGS)"

# The libFuzzer targets, in $(FUZZ_BUILD)/fuzz/: clang, ASan, UBSan, only the
# libraries they need.
$(FUZZ_BUILD)/CMakeCache.txt:
	@scripts/setup.sh fuzz
	cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DKEVO_FUZZ=ON -DKEVO_BUILD_TESTS=OFF -DKEVO_WITH_CUDA=OFF

fuzz: setup $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz

# Every fuzz target for $(FUZZ_SECONDS) s from its seed corpus; fails on any
# finding (CI runs it). Longer runs: scripts/fuzz.sh $(FUZZ_BUILD) SECONDS [TARGET...].
fuzz-smoke: fuzz
	scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

demo: build
	scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)

format:
	git ls-files '*.h' '*.cpp' | xargs clang-format -i

# clang-tidy on kevo's sources with the checks in .clang-tidy (a few minutes).
tidy: configure
	git ls-files 'core/*.cpp' 'targets/*.cpp' 'eval/*.cpp' 'cli/*.cpp' | \
	  xargs -P $(JOBS) -n 4 clang-tidy -p $(BUILD) --quiet
