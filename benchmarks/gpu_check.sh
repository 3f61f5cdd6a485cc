#!/usr/bin/env bash
# One check of minigrad on a CUDA machine, in under 6 minutes, installing nothing.
#
#   bash benchmarks/gpu_check.sh            # from anywhere; needs numpy, cupy, numba(-cuda),
#                                           # pytest and hypothesis in the current python
#
# Steps (each under its own time limit; a failing step does not stop the others):
#   1. the op test suite with every op test on the GPU (MINIGRAD_TEST_DEVICE=gpu, the
#      tests marked `device`)
#   2. tests/test_gpu.py: devices, modules, optimizers, checkpoints, op families, kernels
#   3. the GPU op cases again with MINIGRAD_KERNELS=numba (the numba.cuda kernels)
#   4. a short `python -m train.toy_translate --device gpu` run
#   5. the GPU training-step benchmark (benchmarks/bench_train.py, PyTorch CUDA too
#      where installed)
#   6. the GPU kernels against their twins and cuBLAS (benchmarks/bench_gpu_kernels.py)
# then prints one summary table. Logs go to $GPU_CHECK_LOGS (default: a temp folder).
# Exit status: 0 when every step that ran passed, 1 otherwise, 2 without a usable GPU.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="${PWD}${PYTHONPATH:+:$PYTHONPATH}"
PYTHON="${PYTHON:-python}"
LOGS="${GPU_CHECK_LOGS:-$(mktemp -d -t minigrad_gpu_check.XXXXXX)}"
mkdir -p "$LOGS"
TOY_STEPS="${TOY_STEPS:-30}"  # a short run: the point is that it runs end to end

if ! GPU_NAME=$("$PYTHON" -c "
import minigrad as mg
if not mg.cuda.is_available():
    raise SystemExit('no usable GPU: ' + mg.cuda.unavailable_reason())
print(mg.cuda.get_device_name())" 2>&1); then
    echo "gpu_check: ${GPU_NAME##*$'\n'}" >&2
    exit 2
fi

ROWS=()
FAILED=0

# run_step NAME LIMIT_SECONDS COMMAND...: run with a time limit, log, remember one row
run_step() {
    local name=$1 limit=$2
    shift 2
    local log="$LOGS/${name// /_}.log" start=$SECONDS status detail
    echo ">>> $name: $*" >&2
    timeout -k 5 "$limit" "$@" >"$log" 2>&1
    local rc=$?
    local took=$((SECONDS - start))
    # the last pytest summary line, else the last non-empty line of the log
    detail=$(grep -E "[0-9]+ (passed|failed|error)" "$log" | tail -n 1)
    [ -n "$detail" ] || detail=$(grep -v '^\s*$' "$log" | tail -n 1)
    detail=$(echo "$detail" | tr -d '=' | tr '|' '/' | sed 's/^ *//; s/ *$//' | cut -c1-90)
    if [ "$rc" -eq 0 ]; then
        status=pass
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="TIMEOUT (${limit}s)"
        FAILED=1
    else
        status="FAIL (rc $rc)"
        FAILED=1
        echo "--- last lines of $log" >&2
        tail -n 25 "$log" >&2
    fi
    ROWS+=("| $name | $status | ${took}s | $detail |")
}

skip_step() {
    ROWS+=("| $1 | skipped | 0s | $2 |")
}

run_step "op tests on gpu" 100 env MINIGRAD_TEST_DEVICE=gpu \
    "$PYTHON" -m pytest -o addopts= -q -p no:cacheprovider -m device tests
run_step "test_gpu.py" 55 "$PYTHON" -m pytest -o addopts= -q -p no:cacheprovider tests/test_gpu.py
run_step "numba.cuda kernels in ops" 25 env MINIGRAD_KERNELS=numba \
    "$PYTHON" -m pytest -o addopts= -q -p no:cacheprovider tests/test_gpu.py \
    -k "op_on_gpu or kernel or second_derivative"

if [ -f train/toy_translate.py ]; then
    run_step "toy_translate --device gpu" 80 \
        "$PYTHON" -m train.toy_translate --device gpu --steps "$TOY_STEPS" --train-size 2000 \
        --eval-every "$TOY_STEPS" --out-dir "$LOGS/toy_translate_run"
else
    skip_step "toy_translate --device gpu" "train/toy_translate.py not present"
fi
if [ -f benchmarks/bench_train.py ]; then
    run_step "bench_train --device gpu" 45 \
        "$PYTHON" -m benchmarks.bench_train --device gpu --config small --steps 10 --no-memory
else
    skip_step "bench_train --device gpu" "benchmarks/bench_train.py not present"
fi
run_step "bench_gpu_kernels" 30 "$PYTHON" -m benchmarks.bench_gpu_kernels

echo
echo "## minigrad GPU check on $GPU_NAME ($("$PYTHON" -c 'import cupy; print("CuPy", cupy.__version__)'))"
echo
echo "| step | status | time | result |"
echo "|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
for name in "bench_train --device gpu" "bench_gpu_kernels"; do
    log="$LOGS/${name// /_}.log"
    if [ -f "$log" ] && grep -q '^|' "$log"; then
        echo
        echo "### $name"
        grep -E '^(\||device|GPU)' "$log"
    fi
done
echo
echo "logs: $LOGS"
exit "$FAILED"
