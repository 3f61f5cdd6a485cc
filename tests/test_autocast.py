"""Autocast op by op, against PyTorch.

PyTorch's CUDA op lists, which minigrad uses on every device, are read from the header
torch installs (ATen/autocast_mode.h). For each op of a table, inside mg.autocast on the
test device (MINIGRAD_TEST_DEVICE) with float32, float16 and mixed inputs:
- the output dtype is what PyTorch's CUDA autocast gives: its casting rule applied to the
  inputs, then the torch op; where torch's CPU autocast treats the op as CUDA's does (the
  op on both of its lists or on neither), torch's own CPU autocast with dtype=float16
  must give that dtype too;
- the values are torch's on the same cast inputs, to a tolerance derived from the dtype.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import make_tensor, test_device, to_numpy

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.amp import op_lists

torch = pytest.importorskip("torch")
TF = torch.nn.functional
HEADER = Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"
DEVICE_TYPE = "cuda" if test_device() == "gpu" else "cpu"
pytestmark = pytest.mark.device


@functools.cache
def _header_lists() -> dict[str, set[str]]:
    """PyTorch's CUDA lists by macro: {"LOWER_PRECISION_FP": {"matmul", ...}, ...}."""
    if not HEADER.exists():
        pytest.skip(f"torch installed without its headers ({HEADER})")
    text = HEADER.read_text()
    lists = {}
    for macro in ("LOWER_PRECISION_FP", "FP32", "FP32_SET_OPT_DTYPE", "PROMOTE",
                  "DIFFERENT_REDISPATCH_SIGNATURE"):
        body = re.search(rf"#define AT_FORALL_{macro}\(_\)(.*?)\n\n", text, re.S).group(1)
        lists[macro] = set(re.findall(r"_\((?:ADD_NS\()?(\w+)", body))
    return lists


def test_op_lists_are_pytorchs_cuda_lists():
    torch_lists = _header_lists()
    assert op_lists.LOWER_PRECISION_FP == torch_lists["LOWER_PRECISION_FP"]
    assert op_lists.FP32 == torch_lists["FP32"]
    # norm: fp32_append_dtype in PyTorch, which is set_opt_dtype's rule for a caller
    assert op_lists.FP32_SET_OPT_DTYPE == (torch_lists["FP32_SET_OPT_DTYPE"]
                                          | torch_lists["DIFFERENT_REDISPATCH_SIGNATURE"])
    assert op_lists.PROMOTE == torch_lists["PROMOTE"]


def _minigrad_functions(op: str) -> list:
    """Where minigrad users call PyTorch's op `op`: mg.op, F.op, mg.linalg.<op without
    linalg_>, the ones that exist."""
    places = ((mg, op), (F, op), (mg.linalg, op.removeprefix("linalg_")))
    return [getattr(owner, name) for owner, name in places
            if op.startswith("linalg_") == (owner is mg.linalg) and hasattr(owner, name)]


def test_every_listed_op_minigrad_has_is_marked_with_its_policy():
    marked = 0
    for op, policy in op_lists.POLICIES.items():
        for function in _minigrad_functions(op):
            assert getattr(function, "autocast_policy", None) == policy, op
            marked += 1
    assert marked >= 40  # the table below covers each of them
    assert mg.Tensor.exp is mg.exp and mg.Tensor.__matmul__ is mg.matmul  # methods too


def _cuda_policy(op: str) -> str | None:
    """The policy of PyTorch's CUDA lists for `op`, from the header (None: no list)."""
    lists = _header_lists()
    for macro, policy in (("LOWER_PRECISION_FP", "lower_precision_fp"), ("FP32", "fp32"),
                          ("FP32_SET_OPT_DTYPE", "fp32_set_opt_dtype"),
                          ("DIFFERENT_REDISPATCH_SIGNATURE", "fp32_set_opt_dtype"),
                          ("PROMOTE", "promote")):
        if op in lists[macro]:
            return policy
    return None


@functools.cache
def _on_cpu_list_as_on_cuda_list(op: str) -> bool:
    """Whether torch's CPU autocast has the op on a list exactly when CUDA's has (the
    table's ops on both lists have one policy on both)."""
    def registered(key):
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key)
                   for name in torch._C._dispatch_get_all_op_names()
                   if name == f"aten::{op}" or name.startswith(f"aten::{op}."))
    return registered("AutocastCPU") == registered("AutocastCUDA")


# (id, PyTorch op whose list applies, input shapes, input domain, call(lib, *inputs))
# lib.t is minigrad or torch, lib.F their functional module, lib.ints makes an int64 tensor
CASES = [
    ("matmul", "matmul", [(3, 4), (4, 5)], "real", lambda L, a, b: a @ b),
    ("mm", "mm", [(3, 4), (4, 5)], "real", lambda L, a, b: L.t.mm(a, b)),
    ("bmm", "bmm", [(2, 3, 4), (2, 4, 5)], "real", lambda L, a, b: L.t.bmm(a, b)),
    ("addmm", "addmm", [(3, 5), (3, 4), (4, 5)], "real", lambda L, c, a, b: L.t.addmm(c, a, b)),
    ("baddbmm", "baddbmm", [(2, 3, 5), (2, 3, 4), (2, 4, 5)], "real",
     lambda L, c, a, b: L.t.baddbmm(c, a, b)),
    ("einsum", "einsum", [(3, 4), (4, 5)], "real", lambda L, a, b: L.t.einsum("ij,jk->ik", a, b)),
    ("linear", "linear", [(3, 4), (5, 4), (5,)], "real", lambda L, x, w, b: L.F.linear(x, w, b)),
    ("conv1d", "conv1d", [(2, 3, 8), (4, 3, 3), (4,)], "real",
     lambda L, x, w, b: L.F.conv1d(x, w, b, padding=1)),
    ("conv2d", "conv2d", [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], "real",
     lambda L, x, w, b: L.F.conv2d(x, w, b)),
    ("sdpa", "scaled_dot_product_attention", [(2, 3, 4), (2, 5, 4), (2, 5, 4)], "real",
     lambda L, q, k, v: L.F.scaled_dot_product_attention(q, k, v)),
    ("dot", "dot", [(4,), (4,)], "real", lambda L, a, b: L.t.dot(a, b)),
    ("atan2", "atan2", [(3, 4), (3, 4)], "real", lambda L, a, b: L.t.atan2(a, b)),
    ("scatter_add", "scatter_add", [(3, 4), (2, 4)], "real",
     lambda L, x, src: x.scatter_add(0, L.ints([[0, 2, 1, 0], [1, 1, 2, 0]]), src)),
    ("exp", "exp", [(3, 4)], "real", lambda L, x: x.exp()),
    ("log", "log", [(3, 4)], "positive", lambda L, x: L.t.log(x)),
    ("rsqrt", "rsqrt", [(3, 4)], "positive", lambda L, x: x.rsqrt()),
    ("log1p", "log1p", [(3, 4)], "positive", lambda L, x: L.t.log1p(x)),
    ("expm1", "expm1", [(3, 4)], "real", lambda L, x: L.t.expm1(x)),
    ("pow_scalar", "pow", [(3, 4)], "real", lambda L, x: x ** 2),
    ("pow_tensor", "pow", [(3, 4), (3, 4)], "positive", lambda L, a, b: L.t.pow(a, b)),
    ("rpow", "pow", [(3, 4)], "real", lambda L, x: 2.0 ** x),
    ("square", "pow", [(3, 4)], "real", lambda L, x: L.t.square(x)),  # torch: pow(x, 2)
    ("softplus", "softplus", [(3, 4)], "real", lambda L, x: L.F.softplus(x)),
    ("softmax", "softmax", [(3, 4)], "real", lambda L, x: L.F.softmax(x, -1)),
    ("softmax_method", "softmax", [(3, 4)], "real", lambda L, x: x.softmax(0)),
    ("log_softmax", "log_softmax", [(3, 4)], "real", lambda L, x: L.F.log_softmax(x, 1)),
    ("sum", "sum", [(3, 4)], "real", lambda L, x: x.sum()),
    ("sum_dim", "sum", [(3, 4)], "real", lambda L, x: L.t.sum(x, 1)),
    ("cumsum", "cumsum", [(3, 4)], "real", lambda L, x: L.t.cumsum(x, 1)),
    ("cumprod", "cumprod", [(3, 4)], "real", lambda L, x: x.cumprod(0)),
    ("logsumexp", "logsumexp", [(3, 4)], "real", lambda L, x: x.logsumexp(1)),
    ("vector_norm", "linalg_vector_norm", [(3, 4)], "real",
     lambda L, x: L.t.linalg.vector_norm(x, 3)),
    ("matrix_norm", "linalg_matrix_norm", [(2, 3, 4)], "real",
     lambda L, x: L.t.linalg.matrix_norm(x)),
    ("norm", "norm", [(3, 4)], "real", lambda L, x: x.norm()),
    ("linalg_norm", "linalg_vector_norm", [(3, 4)], "real", lambda L, x: L.t.linalg.norm(x)),
    ("normalize", "linalg_vector_norm", [(3, 4)], "real", lambda L, x: L.F.normalize(x)),
    ("layer_norm", "layer_norm", [(3, 4), (4,), (4,)], "real",
     lambda L, x, w, b: L.F.layer_norm(x, (4,), w, b)),
    ("group_norm", "group_norm", [(2, 4, 3), (4,), (4,)], "real",
     lambda L, x, w, b: L.F.group_norm(x, 2, w, b)),
    ("rms_norm", "rms_norm", [(3, 4), (4,)], "real", lambda L, x, w: L.F.rms_norm(x, (4,), w)),
    ("cross_entropy", "nll_loss", [(3, 4)], "real",  # torch: log_softmax, then nll_loss
     lambda L, x: L.F.cross_entropy(x, L.ints([0, 3, 1]), label_smoothing=0.1)),
    ("nll_loss", "nll_loss", [(3, 4)], "real", lambda L, x: L.F.nll_loss(x, L.ints([2, 0, 3]))),
    ("mse_loss", "mse_loss", [(3, 4), (3, 4)], "real", lambda L, a, b: L.F.mse_loss(a, b)),
    ("l1_loss", "l1_loss", [(3, 4), (3, 4)], "real", lambda L, a, b: L.F.l1_loss(a, b)),
    ("smooth_l1_loss", "smooth_l1_loss", [(3, 4), (3, 4)], "real",
     lambda L, a, b: L.F.smooth_l1_loss(a, b)),
    ("huber_loss", "huber_loss", [(3, 4), (3, 4)], "real", lambda L, a, b: L.F.huber_loss(a, b)),
    ("bce_with_logits", "binary_cross_entropy_with_logits", [(3, 4), (3, 4)], "probability",
     lambda L, x, y: L.F.binary_cross_entropy_with_logits(x, y)),
    ("kl_div", "kl_div", [(3, 4), (3, 4)], "probability",
     lambda L, a, b: L.F.kl_div(a, b, reduction="batchmean")),
    # on no list: the inputs' dtypes, promoted as anywhere
    ("add", "add", [(3, 4), (3, 4)], "real", lambda L, a, b: a + b),
    ("mul", "mul", [(3, 4), (4,)], "real", lambda L, a, b: a * b),
    ("relu", "relu", [(3, 4)], "real", lambda L, x: L.F.relu(x)),
    ("gelu", "gelu", [(3, 4)], "real", lambda L, x: L.F.gelu(x)),
    ("tanh", "tanh", [(3, 4)], "real", lambda L, x: x.tanh()),
    ("sqrt", "sqrt", [(3, 4)], "positive", lambda L, x: x.sqrt()),
    ("mean", "mean", [(3, 4)], "real", lambda L, x: x.mean(1)),
    ("var", "var", [(3, 4)], "real", lambda L, x: x.var(0)),
    ("amax", "amax", [(3, 4)], "real", lambda L, x: x.amax(1)),
    ("outer", "outer", [(3,), (4,)], "real", lambda L, a, b: L.t.outer(a, b)),
    ("cat", "cat", [(3, 4), (2, 4)], "real", lambda L, a, b: L.t.cat([a, b])),
    ("stack", "stack", [(3, 4), (3, 4)], "real", lambda L, a, b: L.t.stack([a, b])),
    ("where", "where", [(3, 4), (3, 4)], "real", lambda L, a, b: L.t.where(a > 0, a, b)),
    ("embedding", "embedding", [(5, 3)], "real",
     lambda L, w: L.F.embedding(L.ints([[0, 4], [2, 2]]), w)),
    ("batch_norm", "batch_norm", [(4, 3), (3,), (3,)], "real",
     lambda L, x, w, b: L.F.batch_norm(x, None, None, w, b, training=True)),
    ("adaptive_avg_pool2d", "adaptive_avg_pool2d", [(2, 3, 5, 5)], "real",
     lambda L, x: L.F.adaptive_avg_pool2d(x, 2)),
    ("max_pool2d", "max_pool2d", [(2, 3, 4, 4)], "real", lambda L, x: L.F.max_pool2d(x, 2)),
]
COMBINATIONS = ("float32", "float16", "mixed")  # mixed: the first input float16
# F.batch_norm of a float16 input with float32 weights is float32 (PyTorch's: float16),
# inside autocast or not
ONE_DTYPE_ONLY = {"batch_norm"}


def _inputs(shapes, domain: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if domain == "positive":
        return [rng.uniform(0.25, 3.0, shape) for shape in shapes]
    if domain == "probability":
        return [rng.uniform(0.05, 0.95, shape) for shape in shapes]
    return [rng.normal(0.0, 1.0, shape) for shape in shapes]


def _dtypes(combination: str, count: int) -> list[str]:
    if combination == "mixed":
        return ["float16"] + ["float32"] * (count - 1)
    return [combination] * count


def _torch_cuda_autocast(policy: str | None, call, arrays, dtypes):
    """The op as PyTorch's CUDA autocast runs it: its inputs cast by the policy (header's
    rule), then the torch op outside autocast."""
    tensors = [torch.tensor(a, dtype=getattr(torch, d)) for a, d in zip(arrays, dtypes)]
    if policy == "lower_precision_fp":
        tensors = [t.half() for t in tensors]
    elif policy == "fp32":
        tensors = [t.float() for t in tensors]
    elif policy == "fp32_set_opt_dtype":
        tensors = [tensors[0].float(), *tensors[1:]]
    elif policy == "promote":
        widest = (torch.float32 if any(t.dtype == torch.float32 for t in tensors)
                  else torch.float16)
        tensors = [t.to(widest) for t in tensors]
    return call(TORCH, *tensors)


def _torch_cpu_autocast(call, arrays, dtypes):
    tensors = [torch.tensor(a, dtype=getattr(torch, d)) for a, d in zip(arrays, dtypes)]
    with torch.autocast("cpu", dtype=torch.float16):
        return call(TORCH, *tensors)


TORCH = SimpleNamespace(t=torch, F=TF, ints=lambda values: torch.tensor(values))
MINIGRAD = SimpleNamespace(t=mg, F=F, ints=lambda values: make_tensor(np.array(values)))


@pytest.mark.parametrize("combination", COMBINATIONS)
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_op_dtype_and_values_match_pytorch(case, combination):
    name, torch_op, shapes, domain, call = case
    if combination == "mixed" and name in ONE_DTYPE_ONLY:
        pytest.skip("the op's own dtype rule for mixed inputs differs from PyTorch's")
    arrays = _inputs(shapes, domain, seed=len(name))
    dtypes = _dtypes(combination, len(arrays))
    expected = _torch_cuda_autocast(_cuda_policy(torch_op), call, arrays, dtypes)
    if _on_cpu_list_as_on_cuda_list(torch_op):
        assert _torch_cpu_autocast(call, arrays, dtypes).dtype == expected.dtype

    inputs = [make_tensor(a, dtype=d) for a, d in zip(arrays, dtypes)]
    with mg.autocast(DEVICE_TYPE):
        out = call(MINIGRAD, *inputs)

    assert out.dtype.name == str(expected.dtype).removeprefix("torch."), name
    assert out.device.type == DEVICE_TYPE
    _assert_close(to_numpy(out), expected.detach().numpy())


def _assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    """Two libraries' roundings of one computation: rounding its float32 value to float16
    may land either side (one float16 ulp, 2^-10 relative), and float32 work done in
    another order differs by a few float32 ulps (2^-21 relative); both also of the
    largest element's size, for elements that cancelled to near 0."""
    rtol = 2.0**-10 if expected.dtype == np.float16 else 2.0**-21
    largest = float(np.abs(expected.astype(np.float64)).max(initial=1.0))
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=rtol * largest)


def test_explicit_dtype_is_kept():
    # fp32_set_opt_dtype: a dtype the caller passes wins over float32
    x = make_tensor(np.linspace(-2, 2, 12).reshape(3, 4), dtype="float32")
    with mg.autocast(DEVICE_TYPE):
        assert F.softmax(x, -1, dtype=mg.float16).dtype is mg.float16
        assert mg.cumsum(x.half(), 0, dtype=mg.float16).dtype is mg.float16
        assert mg.linalg.vector_norm(x.half(), dtype=mg.float32).dtype is mg.float32


def test_float64_and_integer_inputs_are_not_cast():
    a = make_tensor(np.arange(12.0).reshape(3, 4), dtype="float64")
    ints = make_tensor(np.arange(12).reshape(3, 4))
    with mg.autocast(DEVICE_TYPE):
        assert (a @ a.T).dtype is mg.float64
        assert a.exp().dtype is mg.float64
        assert ints.sum().dtype is mg.int64
        assert (ints @ ints.T).dtype is mg.int64


def test_binary_cross_entropy_is_refused():
    p = make_tensor(np.full((2, 3), 0.5), dtype="float32")
    with mg.autocast(DEVICE_TYPE), pytest.raises(RuntimeError, match="with_logits"):
        F.binary_cross_entropy(p, p)
    with mg.autocast(DEVICE_TYPE, enabled=False):
        assert F.binary_cross_entropy(p, p).dtype is mg.float32


def test_result_is_the_op_on_the_cast_inputs_bit_for_bit():
    rng = np.random.default_rng(0)
    x = make_tensor(rng.normal(size=(4, 6)), dtype="float32")
    w = make_tensor(rng.normal(size=(5, 6)), dtype="float32")
    b = make_tensor(rng.normal(size=(5,)), dtype="float32")
    with mg.autocast(DEVICE_TYPE):
        linear = F.linear(x, w, b)
        softmax = F.softmax(linear, -1)
    assert np.array_equal(to_numpy(linear), to_numpy(F.linear(x.half(), w.half(), b.half())))
    assert np.array_equal(to_numpy(softmax), to_numpy(F.softmax(linear.float(), -1)))


def test_float16_product_within_its_rounding_of_the_float32_one():
    """Each input rounds to float16 (relative error u = 2^-11), the products are summed in
    float32 (k terms: k 2^-24) and the result rounds to float16 (u): the error is at most
    (3u + k 2^-24) sum_k |a_ik| |b_kj|."""
    rng = np.random.default_rng(1)
    k = 64
    a, b = rng.normal(size=(8, k)), rng.normal(size=(k, 5))
    with mg.autocast(DEVICE_TYPE):
        out = make_tensor(a, dtype="float32") @ make_tensor(b, dtype="float32")
    bound = (3 * 2.0**-11 + k * 2.0**-24) * (np.abs(a) @ np.abs(b))
    error = np.abs(to_numpy(out).astype(np.float64) - a @ b)
    assert (error <= bound).all()
    assert error.max() > 0  # float16 it is, not float32
