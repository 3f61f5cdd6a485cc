#!/usr/bin/env bash
# One check of minigrad on a machine with an NVIDIA GPU, in about 8 minutes, installing
# nothing. From the repository:
#
#   PYTHONPATH=. bash benchmarks/gpu_check.sh                 # the check
#   MINIGRAD_FAKE_GPU=1 bash benchmarks/gpu_check.sh --quick  # its rehearsal on the CuPy
#                                                             # stand-in (CI runs it)
#
# Needs a Python with numpy, cupy, numba, numba-cuda, pytest and hypothesis; PyTorch with
# CUDA gives the rival's column. Prints the versions and the GPU first (whether numba-cuda
# finds the CUDA driver and NVVM; which tests compare with a PyTorch other than the one
# they were written against), then runs nine sections, each under its own time limit (a
# section that fails or hangs cannot stop the others), and ends with one table: a row per
# section and per target (toy_translate >= 99% exact match in under 2 minutes; the
# paper-base step at most 1.5x PyTorch CUDA). A target whose section failed or ran out of
# time reads MISSED with the section's status.
#
#   side by side (they check results, not time), 125 s each:
#     gpu_tests      tests/test_gpu.py, test_gpu_plumbing.py, test_dlpack.py,
#                    test_gpu_toy_translate.py, and mg.compile on the GPU:
#                    test_compile_gpu.py, test_compile_gpu_fusion.py (CuPy
#                    kernels made by fusion), test_compile_cuda_graph.py (graphs)
#     op_suite       the op tests on the GPU (test_ops_*.py with MINIGRAD_TEST_DEVICE=gpu)
#     nn_suite       the other tests that follow MINIGRAD_TEST_DEVICE (autograd, errors,
#                    tensors, nn, functional, optim, models, decoding) on the GPU
#     numba_kernels  the GPU op cases with MINIGRAD_KERNELS=numba (the numba.cuda kernels)
#   alone, one after the other (they measure time):
#     toy_translate  python -m train.toy_translate --device gpu (its defaults)   135 s
#     bench_train    the training step against PyTorch CUDA eager (each row     45 s
#                    printed as it is measured)
#     bench_compile  the same steps as one mg.compile plan, against eager      100 s
#                    minigrad, PyTorch CUDA eager and torch.compile
#                    (mode="reduce-overhead": CUDA graphs)
#     bench_kernels  the numba.cuda kernels against their twins and cuBLAS      25 s
#     index_add      the embedding gradient: CuPy's add.at (atomics), minigrad's 30 s
#                    sorted segment sum, a one-hot product through cuBLAS; which
#                    is fastest at the models' shapes, and which repeat their bits
#
# --quick runs every section's command on little work: a few tests, a 30-step toy run, one
# timed step of the toy_translate model, tiny kernels. On the stand-in the numba.cuda
# kernels run in Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1). Logs go to
# $GPU_CHECK_LOGS (default: a new temp dir).
# Exit status: 0 when every section passed, 1 otherwise, 2 without a usable GPU.
set -u
QUICK=0
case "${1:-}" in
    --quick) QUICK=1 ;;
    "") ;;
    *) echo "usage: bash benchmarks/gpu_check.sh [--quick]" >&2; exit 64 ;;
esac
cd "$(dirname "$0")/.."
export PYTHONPATH="${PWD}${PYTHONPATH:+:$PYTHONPATH}"
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
LOGS="${GPU_CHECK_LOGS:-$(mktemp -d -t minigrad_gpu_check.XXXXXX)}"
mkdir -p "$LOGS"
rm -f "$LOGS"/*.status

GPU_TEST_FILES=(tests/test_gpu.py tests/test_gpu_plumbing.py tests/test_dlpack.py
                tests/test_gpu_toy_translate.py tests/test_compile_gpu.py
                tests/test_compile_gpu_fusion.py tests/test_compile_cuda_graph.py)
OP_TEST_FILES=(tests/test_ops_grad.py tests/test_ops_gradgrad.py tests/test_ops_torch.py)
NN_TEST_FILES=(tests/test_autograd.py tests/test_errors.py tests/test_tensor.py
               tests/test_nn.py tests/test_functional.py tests/test_optim.py
               tests/test_models.py tests/test_decoding.py)

"$PYTHON" -m benchmarks.gpu_check_report versions "${GPU_TEST_FILES[@]}" "${OP_TEST_FILES[@]}" \
    "${NN_TEST_FILES[@]}" || exit 2
if [ "${MINIGRAD_FAKE_GPU:-0}" != 0 ] && [ -n "${MINIGRAD_FAKE_GPU:-}" ]; then
    export NUMBA_ENABLE_CUDASIM=1  # the stand-in has no GPU to run numba.cuda kernels on
fi

# run_section NAME LIMIT_SECONDS COMMAND...: run under a time limit; leave NAME.log and
# NAME.status ("<exit status> <seconds> <limit>") in $LOGS
run_section() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    echo ">>> $name (limit ${limit}s): $*"
    timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
    local rc=$?
    echo "$rc $((SECONDS - start)) $limit" >"$LOGS/$name.status"
    echo "<<< $name: exit status $rc after $((SECONDS - start)) s"
}

# show_failures NAME...: the last lines of the log of each section that did not pass
show_failures() {
    local name
    for name in "$@"; do
        if [ "$(cut -d' ' -f1 "$LOGS/$name.status")" != 0 ]; then
            tail -n 15 "$LOGS/$name.log" | sed "s/^/    $name| /"
        fi
    done
}

# -v: a section stopped by its time limit still shows which tests passed and failed
PYTEST=("$PYTHON" -m pytest -o addopts= -v -p no:cacheprovider)
if [ "$QUICK" = 1 ]; then
    GPU_TESTS_PICK=(-x -k "creation or mixing or float16 or rng_state or launch or dlpack")
    OP_SUITE_PICK=(-x -k "test_unary or test_softmax or matmul")
    NN_SUITE_PICK=(-x -k "linear or attention or greedy")
    KERNELS_PICK=(-x -k "kernel_mode or (op_on_gpu and softmax)")
    TOY_ARGS=(--steps 30 --train-size 2000 --d-model 32 --ff 64 --layers 1 --heads 2)
    BENCH_TRAIN_ARGS=(--config toy_translate --steps 1)
    BENCH_COMPILE_ARGS=(--config toy_translate --steps 1)
    BENCH_KERNELS_ARGS=(--quick)
    INDEX_ADD_ARGS=(--quick)
else
    GPU_TESTS_PICK=()
    OP_SUITE_PICK=()
    NN_SUITE_PICK=()
    KERNELS_PICK=(-k "op_on_gpu or kernel or second_derivative")
    TOY_ARGS=()
    BENCH_TRAIN_ARGS=(--config paper-base --config toy_translate --steps 10)
    BENCH_COMPILE_ARGS=(--config toy_translate --config paper-base --steps 10)
    BENCH_KERNELS_ARGS=()
    INDEX_ADD_ARGS=()
fi

run_section gpu_tests 125 "${PYTEST[@]}" ${GPU_TESTS_PICK[@]+"${GPU_TESTS_PICK[@]}"} \
    "${GPU_TEST_FILES[@]}" &
run_section op_suite 125 env MINIGRAD_TEST_DEVICE=gpu "${PYTEST[@]}" -m device \
    ${OP_SUITE_PICK[@]+"${OP_SUITE_PICK[@]}"} "${OP_TEST_FILES[@]}" &
run_section nn_suite 125 env MINIGRAD_TEST_DEVICE=gpu "${PYTEST[@]}" -m device \
    ${NN_SUITE_PICK[@]+"${NN_SUITE_PICK[@]}"} "${NN_TEST_FILES[@]}" &
run_section numba_kernels 125 env MINIGRAD_KERNELS=numba "${PYTEST[@]}" "${KERNELS_PICK[@]}" \
    tests/test_gpu.py &
wait
show_failures gpu_tests op_suite nn_suite numba_kernels

run_section toy_translate 135 "$PYTHON" -m train.toy_translate --device gpu \
    ${TOY_ARGS[@]+"${TOY_ARGS[@]}"} --out-dir "$LOGS/toy_translate_run"
show_failures toy_translate
grep -E "exact match|trained to step" "$LOGS/toy_translate.log"
run_section bench_train 45 "$PYTHON" -m benchmarks.bench_train --device gpu \
    --framework minigrad --framework torch --no-memory "${BENCH_TRAIN_ARGS[@]}"
show_failures bench_train
grep -E "^\||left out" "$LOGS/bench_train.log"
run_section bench_compile 100 "$PYTHON" -m benchmarks.bench_train --device gpu \
    --framework minigrad --framework minigrad-compiled --framework torch \
    --framework torch-compiled --no-memory "${BENCH_COMPILE_ARGS[@]}"
show_failures bench_compile
grep -E "^\||left out" "$LOGS/bench_compile.log"
run_section bench_kernels 25 "$PYTHON" -m benchmarks.bench_gpu_kernels \
    ${BENCH_KERNELS_ARGS[@]+"${BENCH_KERNELS_ARGS[@]}"}
show_failures bench_kernels
grep -E "^\|" "$LOGS/bench_kernels.log"
run_section index_add 30 "$PYTHON" -m benchmarks.bench_index_add --device gpu \
    ${INDEX_ADD_ARGS[@]+"${INDEX_ADD_ARGS[@]}"}
show_failures index_add
grep -E "^\|" "$LOGS/index_add.log"

echo
echo "logs: $LOGS"
echo
QUICK_FLAG=()
[ "$QUICK" = 1 ] && QUICK_FLAG=(--quick)
"$PYTHON" -m benchmarks.gpu_check_report table "$LOGS" ${QUICK_FLAG[@]+"${QUICK_FLAG[@]}"}
