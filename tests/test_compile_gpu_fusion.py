"""Fusion on the GPU: a GPU plan's elementwise runs become generated cupy.ElementwiseKernels
(compile/cuda_kernel_source.py), replayed bit for bit as the eager GPU run computes.

Each test runs on the real GPU where CUDA is usable, else on the CuPy stand-in, whose
ElementwiseKernel evaluates the generated CUDA C with C's float rules.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from training_steps import training_step

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.compile import elementwise
from minigrad.compile.cuda_kernel_source import cuda_source
from minigrad.compile.elementwise import Constant, Node
from minigrad.ops.indexing import IndexAdd

pytestmark = pytest.mark.filterwarnings("error:mg.compile")


def _model(device: str) -> nn.Module:
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.25), nn.LayerNorm(16),
                         nn.Linear(16, 4)).to(device)


def _batches(count: int = 4) -> list:
    rng = np.random.default_rng(7)
    return [(mg.tensor(rng.standard_normal((5, 6)).astype(np.float32), device="cuda"),
             mg.tensor(rng.integers(0, 4, 5), device="cuda")) for _ in range(count)]


def _train(compiled: bool):
    mg.manual_seed(3)
    model = _model("cuda")
    opt = optim.AdamW(model.parameters(), lr=3e-2)
    step = training_step(model, opt, F.cross_entropy)
    run = mg.compile(step) if compiled else step
    losses = [run(x, y).numpy().copy() for x, y in _batches()]
    return losses, [p.numpy().copy() for p in model.parameters()], run


def test_a_fused_gpu_training_step_equals_the_eager_gpu_run_bit_for_bit(gpu_or_stand_in):
    eager_losses, eager_params, _ = _train(compiled=False)
    losses, params, step = _train(compiled=True)
    for got, want in zip(losses + params, eager_losses + eager_params, strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    groups = step.plans()[-1].fused_groups()
    assert groups, "the GELU's and dropout's elementwise runs make fused kernels"
    for group in groups:
        assert group.source.startswith("// A fused elementwise kernel")
        assert "operation:" in group.source and "in_params:" in group.source


def test_fused_gpu_kernels_are_elementwise_kernels_without_contraction(gpu_or_stand_in):
    cupy = gpu_or_stand_in
    compiled = mg.compile(lambda a, b, c: a * b + c - b)
    a, b, c = (mg.randn(64, 32, device="cuda") for _ in range(3))
    got = compiled(a, b, c)
    assert np.array_equal(got.numpy(), (a * b + c - b).numpy())
    (group,) = compiled.plans()[0].fused_groups()
    kernel = group.fn.__globals__["kernel"]
    assert isinstance(kernel, cupy.ElementwiseKernel)
    assert "--fmad=false" in group.source
    assert "float t0 = in0 * in1;" in group.source


def test_where_comparisons_and_casts_fuse_on_the_gpu(gpu_or_stand_in):
    def select(a, b):
        chosen = mg.where(a > 0.25, a * 2.0, b - 1.0)
        return chosen * (b <= a).to(mg.float32)

    compiled = mg.compile(select)
    a, b = mg.randn(6, 5, device="cuda"), mg.randn(5, device="cuda")
    assert np.array_equal(compiled(a, b).numpy(), select(a, b).numpy())
    (group,) = compiled.plans()[0].fused_groups()
    assert " ? " in group.source and "bool t" in group.source


def test_cupy_array_operators_fuse_as_the_functions_they_call(gpu_or_stand_in):
    def raw(x, y):  # cupy.ndarray.__mul__, __sub__, __gt__ on the arrays themselves
        a, b = x.array, y.array
        return mg.Tensor((a * b - a) * (a > b))

    compiled = mg.compile(raw)
    x, y = mg.randn(4, 3, device="cuda"), mg.randn(4, 3, device="cuda")
    assert np.array_equal(compiled(x, y).numpy(), raw(x, y).numpy())
    (group,) = compiled.plans()[0].fused_groups()
    assert len(group.replaced) == 4


def test_the_same_work_on_the_same_dtypes_shares_one_kernel(gpu_or_stand_in):
    first = mg.compile(lambda a, b: (a + b) * b)
    second = mg.compile(lambda x, y: (x + y) * y)
    first(mg.randn(3, 4, device="cuda"), mg.randn(3, 4, device="cuda"))
    second(mg.randn(7, 2, device="cuda"), mg.randn(2, device="cuda"))
    (one,) = first.plans()[0].fused_groups()
    (other,) = second.plans()[0].fused_groups()
    assert one.fn.__globals__["kernel"] is other.fn.__globals__["kernel"]


def test_relu_and_maximum_stay_cupy_calls_on_the_gpu(gpu_or_stand_in):
    """CuPy's maximum maps every NaN to one NaN and leaves 0.0 against -0.0 to the device:
    no CUDA expression is sure to give its bits, so neither is fused."""
    compiled = mg.compile(lambda a, b: (a + b).relu() * b + mg.maximum(a, b) * a)
    a, b = mg.randn(3, 4, device="cuda"), mg.randn(3, 4, device="cuda")
    got = compiled(a, b)
    assert np.array_equal(got.numpy(), ((a + b).relu() * b + mg.maximum(a, b) * a).numpy())
    replaced = [step.label for group in compiled.plans()[0].fused_groups()
                for step in group.replaced]
    assert not any("Relu" in label or "Maximum" in label for label in replaced)


def test_a_gpu_plan_fuses_its_gpu_arrays_only(gpu_or_stand_in):
    def mixed(a, b, x):
        return (a * b + a, (x * x + x))

    compiled = mg.compile(mixed)
    a, b, x = mg.randn(4, device="cuda"), mg.randn(4, device="cuda"), mg.randn(4)
    on_gpu, on_cpu = compiled(a, b, x)
    assert np.array_equal(on_gpu.numpy(), (a * b + a).numpy())
    assert np.array_equal(on_cpu.numpy(), (x * x + x).numpy())
    (group,) = compiled.plans()[0].fused_groups()
    assert group.source.startswith("// A fused elementwise kernel")
    assert group.reads == tuple(compiled.plans()[0].externals[i].slot for i in (0, 1))


def test_a_wrong_gpu_kernel_runs_the_step_eagerly_with_a_warning(gpu_or_stand_in,
                                                                 monkeypatch):
    wrong = dict(elementwise.INFIX, sub="+")
    monkeypatch.setattr(elementwise, "INFIX", wrong)
    compiled = mg.compile(lambda a, b: (a - b) * b)
    a, b = mg.randn(5, device="cuda"), mg.randn(5, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(a, b)
    assert np.array_equal(got.numpy(), ((a - b) * b).numpy())
    assert any("mg.compile" in str(w.message) for w in caught)


def test_debug_output_prints_the_cuda_kernel(gpu_or_stand_in, monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_DEBUG", "compile")
    compiled = mg.compile(lambda a, b: (a * b + 0.5) / b)
    compiled(mg.randn(3, device="cuda"), mg.randn(3, device="cuda"))
    printed = capsys.readouterr().err
    assert "float t1 = t0 + 0.5f;" in printed and "out0 = t2;" in printed


# ----------------------------------------------------------------------------- the source


def _arrays(**dtypes) -> dict:
    return {int(name[1:]): np.zeros(3, dtype) for name, dtype in dtypes.items()}


def test_the_source_computes_each_op_in_its_dtype_with_typed_literals():
    arrays = _arrays(s1=np.float32, s2=np.bool_, s3=np.float32, s4=np.float32,
                     s5=np.float64, s6=np.bool_)
    nodes = [Node("masked_scale", (1, 2, Constant(1 / 0.9)), 3, "MaskedScale.forward"),
             Node("sub", (3, Constant(2.5, np.dtype(np.float64))), 4, "np.subtract"),
             Node("cast", (4,), 5, "ndarray.astype"),
             Node("gt", (5, Constant(0.0)), 6, "np.greater")]
    source = cuda_source(nodes, [1, 2], [5, 6], {}, arrays)
    assert source.in_params == "float32 in0, bool in1"
    assert source.out_params == "float64 out0, bool out1"
    assert source.operation.splitlines() == [
        "float t0 = in0 * (float)(in1) * 1.1111112f;  // MaskedScale.forward",
        "float t1 = t0 - 2.5f;  // np.subtract",
        "double t2 = (double)(t1);  // ndarray.astype",
        "bool t3 = t2 > 0.0;  // np.greater",
        "out0 = t2;",
        "out1 = t3;",
    ]


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_a_constant_that_is_not_finite_has_no_cuda_source(value):
    arrays = _arrays(s1=np.float32, s2=np.float32)
    nodes = [Node("mul", (1, Constant(value)), 2, "np.multiply")]
    assert cuda_source(nodes, [1], [2], {}, arrays) is None


def test_the_adjoint_of_a_split_is_left_to_cupy_on_the_gpu(gpu_or_stand_in):
    """A pad reads its input at a shifted index, which an ElementwiseKernel cannot: on
    the GPU the split's IndexAdds run as CuPy's, and the adds after them still fuse."""
    def split_product(x):
        q, k, v = x.split(4, dim=-1)
        return (q * k * v * 2.0).sum()

    values = np.random.default_rng(9).standard_normal((3, 12)).astype(np.float32)
    compiled = mg.compile(split_product, fullgraph=True)
    grads = []
    for function in (compiled, compiled, split_product):
        x = mg.tensor(values, device="cuda", requires_grad=True)
        function(x).backward()
        grads.append(x.grad.numpy())
    assert np.array_equal(grads[1], grads[2]) and np.array_equal(grads[0], grads[2])
    (entry,) = [e for entries in compiled._plans.values() for e in entries]
    (backward,) = entry.backwards
    groups = backward.plan.fused_groups()
    assert all(getattr(step, "cls", None) is not IndexAdd for group in groups
               for step in group.replaced)
    padded = {step.out for step in backward.plan.steps
              if getattr(step, "cls", None) is IndexAdd}
    assert len(padded) == 3
    # the sum of the three padded gradients: one kernel of two adds
    assert any(set(group.reads) == padded and len(group.replaced) == 2 for group in groups)
