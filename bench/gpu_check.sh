#!/usr/bin/env bash
# One short GPU session, for a machine with an NVIDIA GPU and a CUDA jax but
# maybe no asv, no git history and little time (README, Performance: GPU):
#   1. the GPU test: the jitted paths run on the GPU and agree with the CPU;
#   2. the performance issue's benchmark classes, run in one process by
#      bench.direct (ScaleFit first: colours, steps/s, edge updates/s and
#      end-to-end fit at m = 10^5 and 10^6, C in {10, 100}), starting no new
#      class after BUDGET seconds; results in OUT_DIR/gpu.json;
#   3. predict's peak GPU memory at 2.5·10⁵ and 10⁶ queries (bench.device_memory);
#   4. the engine, graph, prediction, posterior, persistence, property and
#      learned-metric tests on the GPU (GPU_TESTS, the fast tier), for
#      TEST_SECONDS (default 180), each test's outcome in OUT_DIR/tests.log;
#   5. where a large fit's time goes (bench.gpu_breakdown: the exact search's
#      kernels and the float32 matmul bound, the colored schedule's prepare
#      and passes), in OUT_DIR/breakdown.jsonl;
#   6. the two-process test (tests/test_multihost.py) with both processes on
#      the GPU, in OUT_DIR/multihost.log.
# Everything compiles at XLA's default settings, the programs users run: the
# tests at JAXNN_TEST_XLA=default (tests/conftest.py), the fast-compile settings
# cleared from the environment.
# Usage (from the repository root):
#   bash bench/gpu_check.sh [OUT_DIR] [BUDGET_SECONDS]
# Environment: PARTS (which of test bench memory tests breakdown multihost run;
# default all), GPU_BENCH (benchmark patterns), GPU_TESTS, TEST_SECONDS, TEST_WORKERS.
set -u
out=${1:-gpu-results}
budget=${2:-300}
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 JAXNN_TEST_XLA=default
unset JAX_DISABLE_MOST_OPTIMIZATIONS
XLA_FLAGS=$(echo "${XLA_FLAGS:-}" | sed -e 's/--xla_cpu_use_fusion_emitters=false//g' -e 's/--xla_cpu_parallel_codegen_split_count=1//g')
export XLA_FLAGS
nvidia-smi -L || echo "no nvidia-smi"
python3 -c "import jax, jaxnn; print('jax', jax.__version__, jax.devices())"

parts=" ${PARTS:-test bench memory tests breakdown multihost} "
want() { [[ $parts == *" $1 "* ]]; }

if want test; then
echo "== GPU test"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_sharding.py -k gpu_matches -rs 2>&1 | tail -25
fi

if want breakdown; then
echo "== where a large fit's time goes"
JAX_PLATFORMS=${JAX_PLATFORMS:-cuda} timeout 420 python3 -m bench.gpu_breakdown 2>&1 | tee "$out/breakdown.jsonl"
fi

if want multihost; then
echo "== two processes on the GPU"
# both processes share the one GPU: neither takes most of its memory up front
JAXNN_MULTIHOST_PLATFORM=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 300 python3 -m pytest -q -o addopts= \
    -p no:cacheprovider tests/test_multihost.py -k one_process_model --durations=3 2>&1 | tee "$out/multihost.log" | tail -40
fi

if want bench; then
echo "== benchmarks (budget ${budget} s)"
# shellcheck disable=SC2086  # the patterns are words
JAX_PLATFORMS=${JAX_PLATFORMS:-cuda} timeout $((budget + 60)) python3 -m bench.direct --budget "$budget" \
    --out "$out/gpu.json" ${GPU_BENCH:-ScaleFit '^GreedyStep\.' NumbaVsColored 'KnnGraph\.|GraphVsSklearn' GreedyFloor '^Predict\.' TreeStep LearnedMetric} \
    2>&1 | tee "$out/bench.log"
fi

if want memory; then
echo "== predict's peak GPU memory"
JAX_PLATFORMS=${JAX_PLATFORMS:-cuda} timeout 300 python3 -m bench.device_memory 2>&1 | tee "$out/memory.log"
fi

if want tests; then
echo "== tests on the GPU (${TEST_SECONDS:-180} s)"
# pynndescent (a dependency of jaxnn) may be missing where the image has no jaxnn install: its tests skipped
skip=()
python3 -c "import pynndescent" 2>/dev/null || { skip=(-k "not nndescent"); echo "no pynndescent: its tests deselected"; }
# several pytest workers share the GPU: no worker takes most of its memory up front.
# At the time limit pytest gets SIGINT, so it still prints the failures it has seen.
# shellcheck disable=SC2086
XLA_PYTHON_CLIENT_PREALLOCATE=false timeout -s INT -k 20 "${TEST_SECONDS:-180}" python3 -m pytest -o addopts= -v \
    -rf --tb=short -p no:cacheprovider -n "${TEST_WORKERS:-4}" -m "not slow" "${skip[@]}" ${GPU_TESTS:-tests/test_engine.py \
    tests/test_graph.py tests/test_prediction.py tests/test_posteriors.py tests/test_trust.py tests/test_persist.py \
    tests/test_properties.py tests/test_learned_metric.py} \
    > "$out/tests.log" 2>&1
echo "$(grep -c ' PASSED' "$out/tests.log") passed, $(grep -c ' SKIPPED' "$out/tests.log") skipped, $(grep -c ' FAILED' "$out/tests.log") failed"
sed -n '/short test summary info/,$p' "$out/tests.log" | head -30
fi
