"""The cases of bench_ops.py: every op of minigrad's method table (minigrad/ops/__init__.py's
OPS) and the main nn.functional ops, each called once for both frameworks.

A case's `call(L, *tensors)` is written once: `L.lib` is `minigrad` or `torch`, `L.F` its
nn.functional, and methods and functions have PyTorch's names in both. Its `inputs(shape,
rng)` gives NumPy arrays for one of the SHAPES: float arrays become float32 tensors (leaves
that require grad when the case runs backward), integer arrays int64 tensors, boolean
arrays bool tensors. A call that returns a tuple (sort, split, max over a dim) is timed
whole and its first tensor carries the backward.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# the shapes of real programs: a Transformer activation (batch, length, d_model), a
# matrix of hidden features, a block of logits, and a ResNet image batch for convolutions
SHAPES = {
    "full": {"act": (32, 16, 256), "mat": (512, 64), "logits": (64, 1000),
             "image": (8, 64, 32, 32)},
    # every case on little work (the test of the script)
    "tiny": {"act": (2, 3, 8), "mat": (6, 8), "logits": (4, 10), "image": (1, 2, 6, 6)},
}
ALL = ("act", "mat", "logits")
TWO_D = ("mat", "logits")


@dataclass(frozen=True)
class Case:
    op: str  # the OPS name, or "F.<name>"
    call: Callable
    inputs: Callable
    label: str = ""  # the call, where the op's name does not say it
    backward: bool = True
    shapes: tuple = ALL
    random: bool = False  # results differ between the frameworks by design


# ----------------------------------------------------------------------------- inputs


def one(s, r):
    return [r.standard_normal(s)]


def two(s, r):
    return [r.standard_normal(s), r.standard_normal(s)]


def positive(s, r):
    return [np.abs(r.standard_normal(s)) + 0.1]


def distinct(s, r):  # no ties, so both frameworks order the indices alike
    return [(r.permutation(int(np.prod(s))) / np.prod(s) - 0.5).reshape(s)]


def nonzero_divisor(s, r):
    return [r.standard_normal(s), np.sign(r.standard_normal(s)) * (r.random(s) + 0.5)]


def near_one(s, r):  # products along a row of 1000 stay finite
    return [1 + 0.01 * r.standard_normal(s)]


def with_mask(s, r):
    return [r.standard_normal(s), r.random(s) < 0.5]


def mask_and_two(s, r):
    return [r.random(s) < 0.5, r.standard_normal(s), r.standard_normal(s)]


def bools(s, r):
    return [r.random(s) < 0.5, r.random(s) < 0.5]


def all_true(s, r):  # `all` and `any` read every element
    return [np.ones(s, bool)]


def row_indices(s, r):
    return [r.standard_normal(s), r.integers(0, s[0], s[0])]


def rows_and_source(s, r):
    return [r.standard_normal(s), r.integers(0, s[0], s[0]), r.standard_normal(s)]


def permuted_rows_and_source(s, r):
    return [r.standard_normal(s), r.permutation(s[0]), r.standard_normal(s)]


def picks(s, r):  # 8 distinct columns of each row
    return [r.standard_normal(s), _distinct_columns(s, r, 8)]


def picks_and_source(s, r):
    k = min(8, s[-1])
    return [r.standard_normal(s), _distinct_columns(s, r, k),
            r.standard_normal(s[:-1] + (k,))]


def _distinct_columns(s, r, k):
    return np.argsort(r.random(s), axis=-1)[..., :k]


def flat_picks(s, r):
    return [r.standard_normal(s), r.integers(0, int(np.prod(s)), s[0])]


def masked_source(s, r):
    return [r.standard_normal(s), r.random(s) < 0.5, r.standard_normal(s)]


def boundaries(s, r):
    return [r.standard_normal(s), np.sort(r.standard_normal(100))]


def token_ids(s, r):
    return [r.integers(0, 100, s)]


def probabilities(s, r):
    e = np.exp(r.standard_normal(s))
    return [e / e.sum(-1, keepdims=True)]


def weight(s, r):  # x @ W with W square over the last dim
    return [r.standard_normal(s), r.standard_normal((s[-1], s[-1])) / np.sqrt(s[-1])]


def bias_and_weight(s, r):
    return [r.standard_normal(s[-1]), r.standard_normal(s),
            r.standard_normal((s[-1], s[-1])) / np.sqrt(s[-1])]


def key_batch(s, r):  # queries (B, T, D) and keys transposed (B, D, T)
    return [r.standard_normal(s), r.standard_normal((s[0], s[2], s[1]))]


def scores_and_keys(s, r):
    return [r.standard_normal((s[0], s[1], s[1]))] + key_batch(s, r)


def flat_pair(s, r):
    return [r.standard_normal(int(np.prod(s))), r.standard_normal(int(np.prod(s)))]


def row_and_column(s, r):
    return [r.standard_normal(int(np.prod(s[:-1]))), r.standard_normal(s[-1])]


def norm_params(s, r):
    return [r.standard_normal(s), 1 + 0.1 * r.standard_normal(s[-1]),
            0.1 * r.standard_normal(s[-1])]


def logits_and_targets(s, r):
    return [r.standard_normal(s), r.integers(0, s[-1], s[0])]


def embedding_ids(s, r):  # (ids of the activation's leading shape, a vocabulary of 1000)
    return [r.integers(0, 1000, s[:-1]), r.standard_normal((1000, s[-1]))]


def image_and_filters(s, r):
    c = s[1]
    return [r.standard_normal(s), r.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c),
            r.standard_normal(c)]


# ----------------------------------------------------------------------------- cases


def _first_half(x):
    return x.shape[-1] // 2


CASES = [
    # elementwise
    Case("abs", lambda L, x: x.abs(), one),
    Case("add", lambda L, x, y: x + y, two),
    Case("atan2", lambda L, x, y: L.lib.atan2(x, y), two),
    Case("ceil", lambda L, x: x.ceil(), one),
    Case("clamp", lambda L, x: x.clamp(-0.5, 0.5), one),
    Case("clamp_max", lambda L, x: L.lib.clamp_max(x, 0.5), one),
    Case("clamp_max_", lambda L, x: x.clamp_max_(0.5), one, backward=False),
    Case("clamp_min", lambda L, x: L.lib.clamp_min(x, -0.5), one),
    Case("clamp_min_", lambda L, x: x.clamp_min_(-0.5), one, backward=False),
    Case("cos", lambda L, x: x.cos(), one),
    Case("div", lambda L, x, y: x / y, nonzero_divisor),
    Case("erf", lambda L, x: x.erf(), one),
    Case("exp", lambda L, x: x.exp(), one),
    Case("expm1", lambda L, x: x.expm1(), one),
    Case("floor", lambda L, x: x.floor(), one),
    Case("floor_divide", lambda L, x, y: x // y, nonzero_divisor, backward=False),
    Case("fmod", lambda L, x, y: L.lib.fmod(x, y), nonzero_divisor),
    Case("gelu", lambda L, x: L.F.gelu(x), one, "F.gelu(x)"),
    Case("gelu", lambda L, x: L.F.gelu(x, approximate="tanh"), one, "F.gelu(x, 'tanh')"),
    Case("hypot", lambda L, x, y: L.lib.hypot(x, y), two),
    Case("lerp", lambda L, x, y: L.lib.lerp(x, y, 0.3), two),
    Case("lerp_", lambda L, x, y: x.lerp_(y, 0.3), two, backward=False),
    Case("log", lambda L, x: x.log(), positive),
    Case("log1p", lambda L, x: x.log1p(), positive),
    Case("masked_fill", lambda L, x, m: x.masked_fill(m, -1e9), with_mask),
    Case("maximum", lambda L, x, y: L.lib.maximum(x, y), two),
    Case("minimum", lambda L, x, y: L.lib.minimum(x, y), two),
    Case("mul", lambda L, x, y: x * y, two),
    Case("neg", lambda L, x: -x, one),
    Case("pow", lambda L, x: x**3, one, "x ** 3"),
    Case("pow", lambda L, x: x**2.7, one, "x ** 2.7, mixed signs"),
    Case("pow", lambda L, x: x**-0.5, positive, "x ** -0.5"),
    Case("pow", lambda L, x, y: x**y, lambda s, r: positive(s, r) + one(s, r), "x ** y"),
    Case("relu", lambda L, x: x.relu(), one),
    Case("remainder", lambda L, x, y: L.lib.remainder(x, y), nonzero_divisor),
    Case("round", lambda L, x: x.round(), one),
    Case("rsqrt", lambda L, x: x.rsqrt(), positive),
    Case("sigmoid", lambda L, x: x.sigmoid(), one),
    Case("sign", lambda L, x: x.sign(), one),
    Case("sin", lambda L, x: x.sin(), one),
    Case("sqrt", lambda L, x: x.sqrt(), positive),
    Case("square", lambda L, x: x.square(), one),
    Case("sub", lambda L, x, y: x - y, two),
    Case("tanh", lambda L, x: x.tanh(), one),
    Case("where", lambda L, m, x, y: L.lib.where(m, x, y), mask_and_two),
    # comparisons and logic
    Case("all", lambda L, m: m.all(), all_true, backward=False),
    Case("allclose", lambda L, x, y: L.lib.allclose(x, y), two, backward=False),
    Case("any", lambda L, m: m.any(), lambda s, r: [np.zeros(s, bool)], backward=False),
    Case("eq", lambda L, x, y: x == y, two, backward=False),
    Case("equal", lambda L, x, y: L.lib.equal(x, y), lambda s, r: one(s, r) * 2,
         backward=False),
    Case("ge", lambda L, x, y: x >= y, two, backward=False),
    Case("gt", lambda L, x, y: x > y, two, backward=False),
    Case("isclose", lambda L, x, y: L.lib.isclose(x, y), two, backward=False),
    Case("isfinite", lambda L, x: x.isfinite(), one, backward=False),
    Case("isinf", lambda L, x: x.isinf(), one, backward=False),
    Case("isnan", lambda L, x: x.isnan(), one, backward=False),
    Case("le", lambda L, x, y: x <= y, two, backward=False),
    Case("logical_and", lambda L, a, b: a.logical_and(b), bools, backward=False),
    Case("logical_not", lambda L, a, b: a.logical_not(), bools, backward=False),
    Case("logical_or", lambda L, a, b: a.logical_or(b), bools, backward=False),
    Case("lt", lambda L, x, y: x < y, two, backward=False),
    Case("ne", lambda L, x, y: x != y, two, backward=False),
    # reductions and scans, over the last dim
    Case("amax", lambda L, x: x.amax(-1), one),
    Case("amin", lambda L, x: x.amin(-1), one),
    Case("argmax", lambda L, x: x.argmax(-1), one, backward=False),
    Case("argmin", lambda L, x: x.argmin(-1), one, backward=False),
    Case("cumprod", lambda L, x: x.cumprod(-1), near_one),
    Case("cumsum", lambda L, x: x.cumsum(-1), one),
    Case("log_softmax", lambda L, x: x.log_softmax(-1), one),
    Case("logsumexp", lambda L, x: x.logsumexp(-1), one),
    Case("max", lambda L, x: x.max(-1), one, "x.max(-1)"),
    Case("mean", lambda L, x: x.mean(-1), one),
    Case("min", lambda L, x: x.min(-1), one, "x.min(-1)"),
    Case("norm", lambda L, x: x.norm(dim=-1), one),
    Case("softmax", lambda L, x: x.softmax(-1), one),
    Case("std", lambda L, x: x.std(-1), one),
    Case("sum", lambda L, x: x.sum(-1), one),
    Case("sum", lambda L, x: x.sum(), one, "x.sum()"),
    Case("sum_to_size", lambda L, x: x.sum_to_size(1, *x.shape[1:]), one),
    Case("trace", lambda L, x: x.trace(), one, shapes=TWO_D),
    Case("var", lambda L, x: x.var(-1), one),
    # products
    Case("addmm", lambda L, b, x, w: L.lib.addmm(b, x, w), bias_and_weight, shapes=TWO_D),
    Case("baddbmm", lambda L, c, q, k: L.lib.baddbmm(c, q, k), scores_and_keys,
         shapes=("act",)),
    Case("bmm", lambda L, q, k: L.lib.bmm(q, k), key_batch, shapes=("act",)),
    Case("dot", lambda L, a, b: L.lib.dot(a, b), flat_pair),
    Case("einsum", lambda L, q, k: L.lib.einsum("bik,bkj->bij", q, k), key_batch,
         shapes=("act",)),
    Case("matmul", lambda L, x, w: x @ w, weight),
    Case("mm", lambda L, x, w: L.lib.mm(x, w), weight, shapes=TWO_D),
    Case("outer", lambda L, a, b: L.lib.outer(a, b), row_and_column),
    # shape
    Case("cat", lambda L, x, y: L.lib.cat([x, y], -1), two),
    Case("chunk", lambda L, x: x.chunk(4, -1), one),
    Case("clone", lambda L, x: x.clone(), one),
    Case("contiguous", lambda L, x: x.transpose(0, 1).contiguous(), one,
         "x.transpose(0, 1).contiguous()"),
    Case("diag", lambda L, x: x.diag(), one, shapes=TWO_D),
    Case("diagonal", lambda L, x: x.diagonal(0, -2, -1), one),
    Case("expand_as", lambda L, x, y: x[:1].expand_as(y), two, "x[:1].expand_as(y)"),
    Case("flatten", lambda L, x: x.flatten(), one),
    Case("flip", lambda L, x: x.flip(-1), one),
    Case("narrow", lambda L, x: x.narrow(-1, 0, _first_half(x)), one),
    Case("permute", lambda L, x: L.lib.permute(x, tuple(reversed(range(x.ndim)))), one),
    Case("repeat", lambda L, x: x.repeat(2, *[1] * (x.ndim - 1)), one),
    Case("repeat_interleave", lambda L, x: x.repeat_interleave(2, dim=0), one),
    Case("reshape", lambda L, x: L.lib.reshape(x, (-1, x.shape[-1] // 2)), one),
    Case("reshape_as", lambda L, x, y: x.reshape_as(y), two),
    Case("roll", lambda L, x: x.roll(1, -1), one),
    Case("select", lambda L, x: x.select(0, 1), one),
    Case("split", lambda L, x: x.split(_first_half(x), -1), one),
    Case("squeeze", lambda L, x: x[None].squeeze(0), one, "x[None].squeeze(0)"),
    Case("stack", lambda L, x, y: L.lib.stack([x, y]), two),
    Case("tile", lambda L, x: x.tile(2, 1), one),
    Case("transpose", lambda L, x: x.transpose(0, 1), one),
    Case("tril", lambda L, x: x.tril(), one),
    Case("triu", lambda L, x: x.triu(), one),
    Case("unbind", lambda L, x: x.unbind(0), one),
    Case("unsqueeze", lambda L, x: x.unsqueeze(0), one),
    Case("view", lambda L, x: x.view(-1), one),
    Case("view_as", lambda L, x, y: x.view_as(y), two),
    # selection, ordering and sampling
    Case("argsort", lambda L, x: x.argsort(-1), distinct, backward=False),
    Case("argwhere", lambda L, m: m.argwhere(), lambda s, r: [r.random(s) < 0.5],
         backward=False),
    Case("bucketize", lambda L, x, b: L.lib.bucketize(x, b), boundaries, backward=False),
    Case("gather", lambda L, x, i: x.gather(-1, i), picks),
    Case("index_add", lambda L, x, i, v: x.index_add(0, i, v), rows_and_source),
    Case("index_add_", lambda L, x, i, v: x.index_add_(0, i, v), rows_and_source,
         backward=False),
    Case("index_copy", lambda L, x, i, v: x.index_copy(0, i, v), permuted_rows_and_source),
    Case("index_copy_", lambda L, x, i, v: x.index_copy_(0, i, v), permuted_rows_and_source,
         backward=False),
    Case("index_fill", lambda L, x, i: x.index_fill(0, i, 0.0), row_indices),
    Case("index_fill_", lambda L, x, i: x.index_fill_(0, i, 0.0), row_indices,
         backward=False),
    Case("index_select", lambda L, x, i: x.index_select(0, i), row_indices),
    Case("masked_scatter", lambda L, x, m, v: x.masked_scatter(m, v), masked_source),
    Case("masked_scatter_", lambda L, x, m, v: x.masked_scatter_(m, v), masked_source,
         backward=False),
    Case("masked_select", lambda L, x, m: x.masked_select(m), with_mask),
    Case("multinomial", lambda L, p: p.multinomial(1), probabilities, backward=False,
         shapes=TWO_D, random=True),
    Case("nonzero", lambda L, m: m.nonzero(), lambda s, r: [r.random(s) < 0.5],
         backward=False),
    Case("scatter", lambda L, x, i, v: x.scatter(-1, i, v), picks_and_source),
    Case("scatter_", lambda L, x, i, v: x.scatter_(-1, i, v), picks_and_source,
         backward=False),
    Case("scatter_add", lambda L, x, i, v: x.scatter_add(-1, i, v), picks_and_source),
    Case("scatter_add_", lambda L, x, i, v: x.scatter_add_(-1, i, v), picks_and_source,
         backward=False),
    Case("searchsorted", lambda L, x, b: L.lib.searchsorted(b, x), boundaries,
         backward=False),
    Case("sort", lambda L, x: x.sort(-1), distinct),
    Case("take", lambda L, x, i: x.take(i), flat_picks),
    Case("take_along_dim", lambda L, x, i: L.lib.take_along_dim(x, i, -1), picks),
    Case("topk", lambda L, x: x.topk(5, -1), distinct),
    Case("unique", lambda L, t: t.unique(), token_ids, backward=False),
    # nn.functional
    Case("F.conv2d", lambda L, x, w, b: L.F.conv2d(x, w, b, padding=1), image_and_filters,
         "3x3, padding 1", shapes=("image",)),
    Case("F.cross_entropy", lambda L, x, t: L.F.cross_entropy(x, t), logits_and_targets,
         shapes=TWO_D),
    Case("F.dropout", lambda L, x: L.F.dropout(x, 0.1, training=True), one, "p=0.1",
         random=True),
    Case("F.embedding", lambda L, i, w: L.F.embedding(i, w), embedding_ids,
         shapes=("act", "mat")),
    Case("F.layer_norm", lambda L, x, w, b: L.F.layer_norm(x, x.shape[-1:], w, b),
         norm_params),
    Case("F.linear", lambda L, x, w, b: L.F.linear(x, w, b),
         lambda s, r: weight(s, r) + [r.standard_normal(s[-1])]),
    Case("F.max_pool2d", lambda L, x: L.F.max_pool2d(x, 2), one, "2x2", shapes=("image",)),
    Case("F.softmax", lambda L, x: L.F.softmax(x, -1), one),
]
