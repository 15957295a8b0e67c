# The README's two commands: `make demo` (install what the main job needs, build, run kagent on the
# bundled examples) and `make test` (install the test tools, build with warnings as errors, run the
# test suite). Everything else is CMake.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release
CUDA_BIN := $(or $(CUDA_HOME),/usr/local/cuda)/bin
CONFIGURE = PATH="$(CUDA_BIN):$$PATH" cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

.PHONY: all deps test-deps build demo-build demo-run test-build demo install test test-asan bench format clean
# CMake's generated Makefiles would print every directory they enter and leave.
MAKEFLAGS += --no-print-directory
# The demo's steps that need a GPU run where nvidia-smi lists one; elsewhere they say so.
HAVE_GPU = nvidia-smi -L >/dev/null 2>&1

all: build

deps:
	@tools/install-deps.sh

test-deps:
	@KAGENT_PYTHON_DEPS=$(BUILD)/python-deps tools/install-deps.sh --test

# A user's build: kagent, kagent-runner and the benchmarks; warnings are shown, not fatal. A build
# folder that `make test` configured keeps its settings (no second full build for the demo).
build: deps
	@if [ -f $(BUILD)/CMakeCache.txt ]; then $(CONFIGURE); \
	 else $(CONFIGURE) -DKAGENT_WERROR=OFF -DKAGENT_BUILD_TESTS=OFF; fi
	cmake --build $(BUILD) -j $(JOBS)

# The development build CI checks: the tests too, and warnings are errors.
test-build: test-deps
	$(CONFIGURE) -DKAGENT_WERROR=ON -DKAGENT_BUILD_TESTS=ON
	cmake --build $(BUILD) -j $(JOBS)

# What the demo runs, and nothing else (not the benchmarks).
demo-build: deps
	@if [ -f $(BUILD)/CMakeCache.txt ]; then $(CONFIGURE) >/dev/null; \
	 else $(CONFIGURE) -DKAGENT_WERROR=OFF -DKAGENT_BUILD_TESTS=OFF >/dev/null; fi
	@cmake --build $(BUILD) -j $(JOBS) --target kagent kagent-runner kagent-compile kagent-jail-init kagent-sandbox-exec

demo: demo-build
	@$(MAKE) demo-run

# The demo's steps on what demo-build built (a test runs them with HAVE_GPU=false: every GPU step
# must say it was skipped, and no step may fail make).
demo-run:
	@echo "== kagent doctor"
	@$(BUILD)/kagent doctor || echo "(kagent doctor exit $$?: what is missing is above)"
	@echo
	@echo "== kagent compile: the bundled examples"
	$(BUILD)/kagent compile examples/vector_add/ref.cu examples/vector_add/cand_naive.cu \
	  examples/vector_add/cand_vec4.cu examples/softmax/*.cu examples/kernelbench_tiny/cand.cu
	@echo
	@echo "== kagent compile: a candidate with a deliberate compile error"
	@$(BUILD)/kagent compile examples/vector_add/cand_compile_error.cu || echo "(exit $$?, as expected: the error above)"
	@echo
	@echo "== kagent eval: correctness, timing and reward; then a kernel that writes half its output"
	@if $(HAVE_GPU); then \
	  $(BUILD)/kagent eval examples/softmax/cand_online.cu --op examples/softmax/op.json; \
	  $(BUILD)/kagent eval tests/gpu/kernels/half_output.cu --op examples/vector_add/op.json \
	    || echo "(exit $$?, as expected: the mismatch above)"; \
	 else echo "skipped: no GPU (nvidia-smi lists none); kagent eval needs one"; fi
	@echo
	@echo "== kagent eval against a PyTorch reference (needs python3 with torch too)"
	@if $(HAVE_GPU); then $(BUILD)/kagent eval examples/kernelbench_tiny/cand.cu --op examples/kernelbench_tiny/op.json \
	  || echo "(exit $$?: see above)"; else echo "skipped: no GPU (nvidia-smi lists none)"; fi
	@echo
	@echo "== kagent optimize: the agent loop on a bundled operator, driven by a SCRIPTED session (no model;"
	@echo "   see examples/optimize_demo/README.md). With a GPU the evaluations are real; without one"
	@echo "   --without-gpu lets the loop run and its evaluations say why they cannot."
	@$(BUILD)/kagent optimize examples/optimize_demo/op.json --without-gpu --provider script \
	  --script examples/optimize_demo/session.jsonl || echo "(exit $$?: see above)"

# kagent and its helpers into $(PREFIX)/bin, its data (the Python children, prompts, skills) into
# $(PREFIX)/share/kagent, where the installed kagent looks for them.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

test: test-build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer (CI runs this too).
test-asan:
	$(MAKE) BUILD=$(BUILD)-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DKAGENT_SANITIZE=ON" test-build
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L 'kagent_unit_tests|kagent_nvrtc_tests|kagent_llm_tests|kagent_model_tools_tests|kagent_agent_tests'

bench: build
	$(BUILD)/benchmarks/compile_latency

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp' '*.cu')

clean:
	rm -rf $(BUILD) $(BUILD)-asan
