"""Which ops autocast changes, and how: PyTorch's CUDA op lists (torch 2.13,
ATen/autocast_mode.h), by PyTorch's op names, used on every device (see autocast_mode.py).

An op minigrad has is marked where it is defined, `@autocast_op("matmul")` (cast_policy.py),
and gets the policy of the list its name is on:

- LOWER_PRECISION_FP: matrix products and convolutions, which gain most from float16: every
  floating input is cast to the autocast dtype (float16).
- FP32: ops whose float16 results lose too much (exp, log, pow, norms, losses): every
  floating input is cast to float32, so the result is float32.
- FP32_SET_OPT_DTYPE: reductions with a `dtype` argument (sum, softmax, cumsum...): run in
  float32 unless the caller passed a dtype, which is kept.
- PROMOTE: ops that take several floating inputs and need them alike: all are cast to the
  widest of their dtypes.
- BANNED: ops that raise inside an autocast region, saying what to use instead.
- NATIVE_IN_PYTORCH: ops on no list whose minigrad code calls listed ops: they keep their
  inputs as they are, and the ops inside are not cast.

Ops on no list run in the dtypes their inputs have (a float16 input gives a float16
result; float16 and float32 inputs promote to float32 as they do anywhere). float64
inputs, integer inputs and tensors on another device than the region's are never cast.
"""
from __future__ import annotations

LOWER_PRECISION_FP = frozenset({
    "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "convolution", "prelu", "addmm", "addmv", "addr",
    "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
    "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
})

FP32 = frozenset({
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm",
    "rms_norm", "group_norm", "frobenius_norm", "nuclear_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
    "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d",
    "_upsample_nearest_exact2d", "upsample_nearest3d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa",
    "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa",
})

# norm is PyTorch's one fp32_append_dtype op: its overloads without a dtype run in float32,
# those with one keep it, which is this list's rule
FP32_SET_OPT_DTYPE = frozenset({
    "prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "sum", "norm",
})

PROMOTE = frozenset({
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
    "index_put", "tensordot", "scatter_add",
})

BANNED = {
    "binary_cross_entropy": (
        "binary_cross_entropy (F.binary_cross_entropy, nn.BCELoss) is unsafe to autocast: "
        "the sigmoid usually right before it saturates in float16. Combine the two with "
        "F.binary_cross_entropy_with_logits or nn.BCEWithLogitsLoss, which autocast runs "
        "in float32"),
}

# ops that are one Function in minigrad but a composite in PyTorch, whose parts autocast
# there: each gets the policy that gives PyTorch's result
COMPOSITES = {
    "cross_entropy": "fp32",  # log_softmax then nll_loss, both float32
    "square": "fp32",  # pow(x, 2)
}

# ops on no list that PyTorch runs as one kernel, and minigrad builds from listed ops: they
# run with casting off, so that they keep their inputs' dtypes as PyTorch's do
NATIVE_IN_PYTORCH = frozenset({"batch_norm", "adaptive_avg_pool1d", "adaptive_avg_pool2d"})

POLICIES: dict[str, str] = {
    **dict.fromkeys(LOWER_PRECISION_FP, "lower_precision_fp"),
    **dict.fromkeys(FP32, "fp32"),
    **dict.fromkeys(FP32_SET_OPT_DTYPE, "fp32_set_opt_dtype"),
    **dict.fromkeys(PROMOTE, "promote"),
    **dict.fromkeys(BANNED, "banned"),
    **COMPOSITES,
    **dict.fromkeys(NATIVE_IN_PYTORCH, "native"),
}
