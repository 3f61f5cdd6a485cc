"""Every size threshold of the kernel dispatchers, in one table.

In auto mode a dispatcher runs its Numba kernel when the input has at least this many
elements, and its NumPy twin below. Each figure is where the kernel started to win, forward
and backward: `python -m benchmarks.bench_modes` times every dispatched op through the
public API in the three modes at the shapes of the training configurations, and
`python -m benchmarks.bench_kernels` the kernels alone across sizes (see
benchmarks/README_kernels.md).
"""

MIN_SIZE = {
    # rows of 10, 16, 20 and 128: the forward kernels win 2.0-3.2x at every size from 80
    "softmax": 1,
    "log_softmax": 1,
    # 1.1-1.4x at 80 elements but 1.0-1.1x at 256; 1.3-1.7x at 4096, 1.9-2.9x at 16384
    "softmax_backward": 1024,
    "log_softmax_backward": 1024,
    # row kernels indexing the rows in place: 2-5x the twins, forward and backward, at every
    # size from (2, 4) to (20, 1024) (Intel Xeon, float32, through the dispatchers)
    "layer_norm": 1,
    "layer_norm_backward": 1,
    "layer_norm_weight_grad": 1,
    # the forward kernel (log_softmax's vector passes, then the loss) beat the twin 2-5x at
    # every size from (4, 10) to (256, 64)
    "cross_entropy": 1,
    # fused row kernel, as layer norm's
    "cross_entropy_backward": 16384,
    # the fused Adam update
    "adam": 1,
    # elementwise erf
    "erf": 1,
    # sums over leading axes (AMD EPYC, float32/float64, NumPy vs the dispatcher): NumPy pays
    # ~15-30 ns a row, the dispatcher ~1.4 us a call; 0.6-0.8x at 64 and 1024 elements,
    # 0.9-1.3x at 4096 (4 to 64 rows), 1.5-3x at (128, 16), (1024, 2), (256, 64), (512, 64),
    # (512, 256) and (32, 16, 64); rows of 1024 and 4096 stay about even up to 16384
    "leading_sum": 4096,
    # dropout's mask, through the dispatcher: 1.5-3.5 us from 1 to 4096 elements, 8.5 us
    # at 32768 and 28 us at 131072, against the twin's 16-19 us, 76 us and 250 us
    "bernoulli_mask": 1,
    # sums of rows into segments (an embedding's gradient), through the dispatcher: 2.4-7 us
    # from 4 rows of 2 to 512 rows of 64, against add.at's 2.5-290 us and 70-380 us for
    # sorting the ids and summing each run with reduceat
    "segment_sum": 1,
}
