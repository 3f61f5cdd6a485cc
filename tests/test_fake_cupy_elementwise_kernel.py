"""The CuPy stand-in's ElementwiseKernel (minigrad/testing/fake_cupy/_elementwise_kernel.py):
the subset of CUDA C that minigrad's compiler writes, evaluated with NumPy in C's types,
compared bit for bit with the same computation done op by op in NumPy; and CuPy's rules
for arguments. These run on every machine: the stand-in needs no GPU."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from minigrad.testing import fake_cupy as cp

F32 = np.float32


def _bits_equal(got, expected) -> None:
    """Equal bit for bit (so -0.0 differs from 0.0, and a NaN matches only a NaN)."""
    got = got.get() if isinstance(got, cp.ndarray) else got
    assert got.dtype == expected.dtype and got.shape == expected.shape
    unsigned = np.dtype(f"u{expected.itemsize}")
    np.testing.assert_array_equal(got.view(unsigned), expected.view(unsigned))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def matrix(rng):
    """A (3, 4) float32 input, transposed so that it is not contiguous."""
    return cp.asarray((rng.standard_normal((4, 3)) * 3).astype(F32)).T


# ----------------------------------------------------------------------------- arithmetic


def test_a_float32_kernel_broadcasts_and_matches_numpy_op_by_op(matrix, rng):
    row = cp.asarray(rng.standard_normal(4).astype(F32))
    kernel = cp.ElementwiseKernel(
        "float32 x, float32 m", "float32 y",
        """
        float d = x - m + 0.25f - 0.5f * x;  // left to right: ((x - m) + 0.25f) - ...
        float s = d * d * 0.5f + 1e-05f;
        y = x * d / s * 3.0f - -x * (float)2;
        """,
        "centred_ratio", options=("--fmad=false",))
    x, m = matrix.get(), row.get()
    d = ((x - m) + F32(0.25)) - F32(0.5) * x
    s = d * d * F32(0.5) + F32(1e-05)
    _bits_equal(kernel(matrix, row), ((x * d) / s) * F32(3) - (-x) * F32(2))


def test_float32_stays_float32_and_a_double_literal_promotes(rng):
    x = rng.uniform(-100, 100, 1000).astype(F32)
    in_float = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 0.1f;")
    in_double = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 0.1;")
    float_product = x * F32(0.1)
    double_product = (x.astype(np.float64) * 0.1).astype(F32)
    assert (float_product != double_product).any()  # the two roundings differ somewhere
    _bits_equal(in_float(cp.asarray(x)), float_product)
    _bits_equal(in_double(cp.asarray(x)), double_product)
    local = cp.ElementwiseKernel("float32 x", "float64 y", "float t = x * 0.1; y = t;")
    _bits_equal(local(cp.asarray(x)), double_product.astype(np.float64))


def test_an_int_converts_to_the_float_operand_s_type():
    """C converts an int to float against a float (NumPy's int32 * float32 is float64)."""
    n = np.array([2**24 + 1, -(2**24) - 3, 7], dtype=np.int32)
    x = np.array([1.0, 3.0, 0.5], dtype=F32)
    kernel = cp.ElementwiseKernel("int32 n, float32 x", "float64 y", "y = n * x;")
    _bits_equal(kernel(cp.asarray(n), cp.asarray(x)),
                (n.astype(F32) * x).astype(np.float64))


def test_integers_follow_cs_promotions():
    """bool and int8 widen to int before arithmetic; int meets unsigned int as unsigned
    (so -1 < 1u is false), a wider signed type keeps the sign."""
    kernel = cp.ElementwiseKernel(
        "bool a, int8 c, int32 s, int64 w, uint32 u",
        "int32 total, int32 negated, int32 widened, bool less, bool wide_less",
        "total = a + a; negated = -a; widened = c + c; less = s < u; wide_less = w < u;")
    a = cp.asarray(np.array([True]))  # one array decides the loop's size
    results = kernel(a, np.int8(100), -1, -1, 1)
    assert [r.tolist() for r in results] == [[2], [-1], [200], [False], [True]]


def test_int_division_rounds_toward_zero_as_in_c():
    a = cp.asarray(np.array([7, -7, 7, -7, 6], dtype=np.int32))
    b = cp.asarray(np.array([2, 2, -2, -2, 3], dtype=np.int32))
    kernel = cp.ElementwiseKernel("int32 a, int32 b", "int32 q, float32 r",
                                  "q = a / b; r = a / 2.0f;")
    quotient, ratio = kernel(a, b)
    assert quotient.tolist() == [3, -3, -3, 3, 2]
    assert ratio.tolist() == [3.5, -3.5, 3.5, -3.5, 3.0]


def test_a_float_literal_rounds_once_as_a_c_compiler_reads_it():
    """The first decimal lies just above the float32 midpoint 1 + 2**-24 but rounds to it
    as a double, so through a double it would round (ties to even) to 1.0; the second is
    the midpoint 1 + 3 * 2**-24, which rounds to the even neighbour above it."""
    kernel = cp.ElementwiseKernel(
        "float32 x", "float32 above_midpoint, float32 midpoint",
        "above_midpoint = x * 1.00000005960464477540f;"
        "midpoint = x * 1.000000178813934326171875f;")
    above_midpoint, midpoint = kernel(cp.asarray(np.ones(1, F32)))
    assert above_midpoint.tolist() == [1 + 2**-23] and midpoint.tolist() == [1 + 2**-22]


def test_python_scalars_take_the_declared_dtype(matrix):
    kernel = cp.ElementwiseKernel("float32 x, float32 scale", "float32 y", "y = x * scale;")
    _bits_equal(kernel(matrix, 0.1), matrix.get() * F32(0.1))


def test_floating_errors_are_silent_as_on_a_gpu():
    x = cp.asarray(np.array([1e20, 0.0, -1.0], dtype=F32))
    kernel = cp.ElementwiseKernel("float32 x", "float32 y, float32 z", "y = x * x; z = x / 0.0f;")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        square, ratio = kernel(x)
    assert square.tolist()[0] == np.inf and np.isnan(ratio.tolist()[1])
    assert ratio.tolist()[::2] == [np.inf, -np.inf]


# ----------------------------------------------------------------------------- bool, ?:, casts


def test_ternary_with_a_bool_input_takes_the_branches_common_type(matrix, rng):
    mask = cp.asarray(rng.random((3, 4)) < 0.5)
    kernel = cp.ElementwiseKernel("bool mask, float32 x", "float64 y, float32 z",
                                  "y = mask ? x : 0.1; z = mask ? x : -1.0f;")
    wide, narrow = kernel(mask, matrix)
    m, x = mask.get(), matrix.get()
    _bits_equal(wide, np.where(m, x.astype(np.float64), 0.1))  # 0.1 as a double
    _bits_equal(narrow, np.where(m, x, F32(-1)))


def test_casts_from_and_to_bool(matrix):
    kernel = cp.ElementwiseKernel("float32 x", "float32 relu, bool nonzero",
                                  "relu = (float)(x > 0.0f) * x; nonzero = (bool)x;")
    values = np.array([-2.0, -0.0, 0.0, 3.0, np.nan], dtype=F32)
    relu, nonzero = kernel(cp.asarray(values))
    _bits_equal(relu, (values > 0).astype(F32) * values)
    assert nonzero.tolist() == [True, False, False, True, True]  # NaN is nonzero in C


def test_isnan_and_logical_operators():
    values = np.array([np.nan, -1.0, 0.0, 2.0], dtype=F32)
    kernel = cp.ElementwiseKernel(
        "float32 x", "float32 y, bool finite_positive",
        "y = isnan(x) ? 0.0f : x; finite_positive = !isnan(x) && x > 0.0f || x != x && 0;")
    cleaned, finite_positive = kernel(cp.asarray(values))
    _bits_equal(cleaned, np.array([0.0, -1.0, 0.0, 2.0], dtype=F32))
    assert finite_positive.tolist() == [False, False, False, True]


def test_comparisons_give_bool_outputs_returned_as_a_tuple(matrix, rng):
    other = cp.asarray(np.round(matrix.get()).astype(F32))
    kernel = cp.ElementwiseKernel(
        "float32 x, float32 y", "bool less, bool at_most, bool equal, bool differ",
        "less = x < y; at_most = x <= y; equal = x == y; differ = x != y;")
    results = kernel(matrix, other)
    x, y = matrix.get(), other.get()
    assert type(results) is tuple and len(results) == 4
    for got, expected in zip(results, (x < y, x <= y, x == y, x != y)):
        _bits_equal(got, expected)


def test_return_tuple_and_no_return(matrix):
    doubled = cp.ElementwiseKernel("float32 x", "float32 y", "y = x + x;", return_tuple=True)
    (result,) = doubled(matrix)
    _bits_equal(result, matrix.get() + matrix.get())
    silent = cp.ElementwiseKernel("float32 x", "float32 y", "y = x + x;", no_return=True)
    out = cp.zeros((3, 4), dtype=F32)
    assert silent(matrix, out) is None
    _bits_equal(out, matrix.get() + matrix.get())


# ----------------------------------------------------------------------------- outputs


def test_results_are_written_into_a_given_output_view(matrix, rng):
    row = cp.asarray(rng.standard_normal(4).astype(F32))
    kernel = cp.ElementwiseKernel("float32 x, float32 m", "float32 y", "y = x * m - 1.0f;")
    storage = cp.zeros((3, 8), dtype=F32)
    view = storage[:, ::2]
    assert kernel(matrix, row, view) is view
    _bits_equal(storage[:, ::2], matrix.get() * row.get() - F32(1))
    _bits_equal(storage[:, 1::2], np.zeros((3, 4), F32))


def test_an_output_that_is_also_an_input_is_updated_in_place(rng):
    """The optimizer pattern: the parameter is read, then overwritten, element by element."""
    p = cp.asarray(rng.standard_normal(5).astype(F32))
    g = cp.asarray(rng.standard_normal(5).astype(F32))
    before = p.get()
    step = cp.ElementwiseKernel("float32 p, float32 g", "float32 p_out",
                                "p_out = p - 0.5f * g;")
    step(p, g, p)
    _bits_equal(p, before - F32(0.5) * g.get())


def test_a_given_output_broadcasts_the_inputs_to_its_shape(rng):
    row = cp.asarray(rng.standard_normal(4).astype(F32))
    out = cp.empty((3, 4), dtype=F32)
    cp.ElementwiseKernel("float32 m", "float32 y", "y = m;")(row, out)
    _bits_equal(out, np.broadcast_to(row.get(), (3, 4)))


# ----------------------------------------------------------------------------- errors


def test_an_array_of_another_dtype_is_refused_naming_the_parameter(matrix):
    kernel = cp.ElementwiseKernel("float32 x, float32 m", "float32 y", "y = x * m;")
    with pytest.raises(TypeError, match="m as float32.*float64"):
        kernel(matrix, cp.zeros(4, dtype=np.float64))
    with pytest.raises(TypeError, match="y as float32.*float64"):
        kernel(matrix, matrix, cp.zeros((3, 4), dtype=np.float64))


def test_host_arrays_are_refused(matrix):
    kernel = cp.ElementwiseKernel("float32 x", "float32 y", "y = x;")
    with pytest.raises(TypeError, match="Unsupported type"):
        kernel(np.ones(3, F32))
    with pytest.raises(TypeError, match="Unsupported type"):
        kernel(matrix, np.ones((3, 4), F32))


def test_an_output_of_another_shape_is_refused(matrix):
    kernel = cp.ElementwiseKernel("float32 x", "float32 y", "y = x;")
    with pytest.raises(ValueError, match="Out shape is mismatched"):
        kernel(matrix, cp.zeros(4, dtype=F32))


@pytest.mark.parametrize("operation, offending", [
    ("float t = x +;", '";"'),
    ("y = x * q;", '"q"'),
    ("int t = x; y = t;", '"int"'),
    ("y = exp(x);", '"exp"'),
    ("x = 1.0f;", '"x"'),
    ("y = x @ 2;", '"@"'),
    ("y = x * 3f;", '"3f"'),
    ("y = x * (x + 1.0f", "the end"),
], ids=["incomplete", "unknown_identifier", "int_local", "function", "assigns_input",
        "character", "integer_with_f", "unclosed"])
def test_operations_outside_the_subset_are_refused_at_construction(operation, offending):
    with pytest.raises(ValueError, match=f'kernel "scaled": .* at {offending}'):
        cp.ElementwiseKernel("float32 x", "float32 y", operation, "scaled")


def test_cupys_construction_errors():
    with pytest.raises(ValueError, match="Can not use 'i' as a parameter name"):
        cp.ElementwiseKernel("float32 i", "float32 y", "y = i;")
    with pytest.raises(ValueError, match='Invalid kernel name: "two words"'):
        cp.ElementwiseKernel("float32 x", "float32 y", "y = x;", "two words")
    with pytest.raises(NotImplementedError, match="preamble"):
        cp.ElementwiseKernel("float32 x", "float32 y", "y = f(x);",
                             preamble="__device__ float f(float v) { return v; }")
    with pytest.raises(NotImplementedError, match="placeholders"):
        cp.ElementwiseKernel("T x", "T y", "y = x;")
    with pytest.raises(NotImplementedError, match="raw"):
        cp.ElementwiseKernel("raw float32 x", "float32 y", "y = x[i];")


def test_the_stand_in_lists_it_among_cupys_names():
    assert "ElementwiseKernel" in dir(cp) and isinstance(cp.ElementwiseKernel, type)
