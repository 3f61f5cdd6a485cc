"""The CuPy stand-in's arrays (minigrad/testing/fake_cupy): each rule where CuPy is strict
raises as CuPy does, explicit copies work, NumPy dispatches to it, and CuPy's own quirks
(wrapping indices, fill, erf's float16 type map, 0-d reductions) are kept. (Its random,
cuda, memory and DLPack modules and the switch MINIGRAD_FAKE_GPU=1:
test_fake_cupy_modules.py.) These run on every machine: the stand-in needs no GPU."""
from __future__ import annotations

from pathlib import Path

import numba
import numpy as np
import pytest

from minigrad.testing import fake_cupy as cp
from minigrad.testing import fake_cupyx

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def x():
    return cp.asarray(np.arange(6.0).reshape(2, 3))


# ----------------------------------------------------------------------------- implicit copies


def test_its_array_is_its_own_type(x):
    assert type(x) is cp.ndarray and not isinstance(x, np.ndarray)
    assert cp.get_array_module(x) is cp and cp.get_array_module(np.ones(1)) is np


@pytest.mark.parametrize("convert", [np.asarray, np.array, np.ascontiguousarray,
                                     lambda a: np.ones(3)[a.astype(np.int64)[0]],
                                     lambda a: memoryview(a)],
                         ids=["asarray", "array", "ascontiguousarray", "index_host", "buffer"])
def test_implicit_conversion_to_numpy_raises_type_error(x, convert):
    with pytest.raises(TypeError):
        convert(x)


def test_a_numba_cpu_kernel_cannot_take_it(x):
    @numba.njit
    def total(a):
        return a.sum()

    with pytest.raises(numba.core.errors.TypingError, match="non-precise type"):
        total(x)


@pytest.mark.parametrize("mix", [
    lambda d, h: d + h, lambda d, h: h + d, lambda d, h: h * d, lambda d, h: d @ h.T,
    lambda d, h: np.add(h, d), lambda d, h: np.concatenate([h, d]),
    lambda d, h: cp.concatenate([d, h]), lambda d, h: cp.where(d > 1, d, h),
    lambda d, h: cp.maximum(d, h),
], ids=["add", "radd", "rmul", "matmul", "np.add", "np.concatenate", "cp.concatenate",
        "cp.where", "cp.maximum"])
def test_mixing_with_a_host_array_raises_type_error(x, mix):
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        mix(x, np.ones((2, 3)))


def test_lists_are_not_elementwise_operands(x):
    with pytest.raises(TypeError, match="Unsupported type <class 'list'>"):
        x + [1.0, 2.0, 3.0]


@pytest.mark.parametrize("nest", [
    lambda d: [d[0, 0], 1.0], lambda d: [d[0], np.ones(3)], lambda d: [d, d[0]],
    lambda d: [[d[0, 0]], d[0, 1]], lambda d: [np.float32(2.0), d[1, 1]],
], ids=["python_float", "numpy_array", "ragged", "uneven_depth", "numpy_scalar"])
@pytest.mark.parametrize("copy", ["array", "asarray"])
def test_a_list_mixing_device_arrays_with_host_values_raises_type_error(x, nest, copy):
    """CuPy concatenates a list only when it holds device arrays of one shape; any other
    list goes through numpy.array, which cannot read device memory."""
    with pytest.raises(TypeError, match="Implicit conversion"):
        getattr(cp, copy)(nest(x))


def test_a_list_of_device_arrays_of_one_shape_is_stacked(x):
    stacked = cp.array([[x[0, 0], x[1, 2]], [x[0, 1], x[0, 2].astype(np.float32)]])
    assert stacked.dtype == np.float64 and stacked.tolist() == [[0, 5], [1, 2]]
    assert cp.asarray([x[1], x[0]]).tolist() == [[3, 4, 5], [0, 1, 2]]


@pytest.mark.parametrize("name", ["ascontiguousarray", "asfortranarray"])
def test_layout_copies_take_device_arrays_only(x, name):
    with pytest.raises(TypeError, match="incorrect type"):
        getattr(cp, name)(np.ones((2, 2)))
    with pytest.raises(TypeError, match="incorrect type"):
        getattr(cp, name)([1.0, 2.0])
    assert getattr(cp, name)(x[0, 1]).shape == (1,)  # a 0-d array becomes 1-d
    assert cp.ascontiguousarray(x) is x and cp.asfortranarray(x).flags.f_contiguous


def test_clip_takes_both_bounds_and_no_numpy_keywords(x):
    with pytest.raises(TypeError, match="a_min"):
        cp.clip(x, a_max=2.0)
    with pytest.raises(TypeError):
        cp.clip(x, min=1.0, max=2.0)  # NumPy 2's names; CuPy has a_min and a_max
    assert cp.clip(x, None, 2.0).tolist() == [[0, 1, 2], [2, 2, 2]]
    assert x.clip(1.0).tolist() == [[1, 1, 2], [3, 4, 5]]  # the method: min=, max=


@pytest.mark.parametrize("call", [
    lambda d: cp.sum(d, where=d > 1), lambda d: d.sum(initial=1.0),
    lambda d: cp.max(d, initial=9.0), lambda d: d.min(where=d > 1, initial=9.0),
    lambda d: np.sum(d, where=d > 1), lambda d: cp.mean(d, where=d > 1),
    lambda d: cp.add(d, 1.0, where=d > 1), lambda d: np.exp(d, where=d > 1),
], ids=["sum_where", "method_initial", "max_initial", "method_where", "np.sum", "mean",
        "ufunc_where", "np.exp"])
def test_numpy_only_keywords_raise_type_error(x, call):
    with pytest.raises(TypeError, match="where|initial"):
        call(x)


def test_sorts_are_stable_and_take_no_other_kind():
    keys = cp.asarray(np.array([2, 1, 2, 1, 0, 1] * 40))
    order = keys.argsort().get()
    assert (order == np.argsort(keys.get(), kind="stable")).all()
    assert (cp.argsort(keys).get() == order).all() and cp.sort(keys).tolist() == sorted(
        keys.tolist())
    with pytest.raises(ValueError, match="kind can only be None or 'stable'"):
        keys.argsort(kind="quicksort")


def test_a_view_has_one_base_the_array_owning_the_memory(x):
    """CuPy keeps a view's base as the root owner: one object, on every access."""
    assert x.base is None
    row = x[1]
    assert row.base is x and row.base is row.base
    for view in (row[1:], x.T, x.reshape(-1), cp.broadcast_to(x[0], (4, 3)), x[:, ::2].T):
        assert view.base is x
    assert (x + 1).base is None and x.copy().base is None


def test_add_at_sums_repeated_positions_in_a_new_order_each_call():
    """CuPy's add.at adds with atomics: 2**24 + 1 rounds back to 2**24 in float32, so the
    sum of 2**24 and 64 ones is 2**24 plus (about) the ones added before it, which depends
    on the order; NumPy's in-order add.at gives 2**24 every time."""
    values = np.ones(65, dtype=np.float32)
    values[0] = 2.0**24
    sums = set()
    for _ in range(8):
        total = cp.zeros(1, dtype=np.float32)
        cp.add.at(total, cp.zeros(65, dtype=np.int64), cp.asarray(values))
        sums.add(total.item())
    assert len(sums) > 1 and all(2**24 <= s <= 2**24 + 64 for s in sums)
    counts = cp.zeros((3, 2))
    cp.add.at(counts, (cp.asarray(np.array([0, 0, 2])), slice(None)), 1.0)
    assert counts.tolist() == [[2, 2], [0, 0], [1, 1]]  # slices and repeats still count


def test_explicit_copies_work_and_are_copies(x):
    host = x.get()
    assert type(host) is np.ndarray and host.tolist() == [[0, 1, 2], [3, 4, 5]]
    host[0, 0] = 100
    assert x[0, 0].item() == 0
    np.testing.assert_array_equal(cp.asnumpy(x), x.get())
    source = np.ones(3)
    device = cp.asarray(source)
    source[0] = 7  # the device copy does not follow the host array
    assert device.tolist() == [1.0, 1.0, 1.0]
    assert cp.asarray(device) is device


def test_one_element_reads(x):
    assert float(x[1, 2]) == 5.0 and x[1, 2].item() == 5.0 and int(x[0, 1]) == 1
    assert bool(x[0, 1]) is True
    with pytest.raises(ValueError, match="size 1"):
        x.item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    with pytest.raises(TypeError):
        [10, 20][x[0, 1].astype(np.int64)]  # no __index__, as in CuPy


# ----------------------------------------------------------------------------- dispatch


def test_numpy_ufuncs_and_functions_return_device_arrays(x):
    for result in (np.exp(x), np.maximum(x, 1.0), np.sum(x, axis=0), np.concatenate([x, x]),
                   np.where(x > 2, x, 0.0), np.linalg.norm(x), np.float32(2.0) * x):
        assert type(result) is cp.ndarray
    np.testing.assert_allclose(np.exp(x).get(), np.exp(x.get()))


def test_reductions_and_element_access_give_0d_device_arrays(x):
    for value in (x.sum(), x.max(), x[1, 2], cp.mean(x), x.argmax()):
        assert type(value) is cp.ndarray and value.shape == ()
    element = x[0, 1]
    element[...] = 50.0  # a 0-d view, as in CuPy
    assert x[0, 1].item() == 50.0


def test_a_ufunc_cupy_lacks_is_not_dispatched(x):
    with pytest.raises(TypeError):
        np.frexp(x)


def test_names_cupy_lacks_raise_attribute_error_naming_them(x):
    with pytest.raises(AttributeError, match="'errstate'"):
        cp.errstate  # noqa: B018
    with pytest.raises(AttributeError, match="'float128'"):
        cp.float128  # noqa: B018
    with pytest.raises(AttributeError, match="setflags"):
        x.setflags(write=False)
    with pytest.raises(AttributeError, match="writeable"):
        x.flags.writeable  # noqa: B018  (CuPy's flags have three fields)
    assert cp.float32 is np.float32 and cp.inf == np.inf


def test_unsupported_dtypes_are_refused():
    with pytest.raises(ValueError, match="Unsupported dtype"):
        cp.asarray(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="Unsupported dtype"):
        cp.asarray(np.array([object()]))


def test_a_foreign_operand_with_higher_priority_gets_its_reflected_operator(x):
    class Wrapper:
        __array_priority__ = 1000

        def __radd__(self, other):
            return "reflected"

    assert x + Wrapper() == "reflected"


# ----------------------------------------------------------------------------- CuPy's own rules


def test_integer_array_indices_wrap_around(x):
    """CuPy's take and scatter kernels wrap out-of-range indices; NumPy raises."""
    assert x[cp.asarray(np.array([0, 2, -3]))].tolist() == [[0, 1, 2], [0, 1, 2], [3, 4, 5]]
    assert x[:, [3, -4]].tolist() == [[0, 2], [3, 5]]
    assert x.take(cp.asarray(np.array([7])), axis=1).tolist() == [[1], [4]]
    y = cp.zeros(3)
    cp.add.at(y, cp.asarray(np.array([0, 3, 4])), 1.0)
    assert y.tolist() == [2.0, 1.0, 0.0]
    y[[5]] = 9.0
    assert y.tolist() == [2.0, 1.0, 9.0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[2]  # a scalar index still raises


def test_basic_assignment_takes_device_arrays_or_scalars_only(x):
    x[0] = cp.asarray(np.array([7.0, 8.0, 9.0]))
    x[1, :] = 1.5
    assert x.tolist() == [[7, 8, 9], [1.5, 1.5, 1.5]]
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        x[0] = np.ones(3)
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        x[0] = [1.0, 2.0, 3.0]
    x[cp.asarray(np.array([1]))] = np.zeros(3)  # advanced indexing copies the value over
    assert x[1].tolist() == [0, 0, 0]


def test_ufunc_at_supports_what_cupy_supports():
    with pytest.raises(NotImplementedError, match="multiply.at"):
        cp.multiply.at(cp.ones(3), [0], 2.0)
    with pytest.raises(TypeError, match="only supports int32, uint32"):
        cp.subtract.at(cp.ones(3), [0], 1.0)


def test_erf_maps_float16_to_float64_as_cupyx_does():
    erf = fake_cupyx.scipy.special.erf
    for dtype, expected in ((np.float16, np.float64), (np.float32, np.float32),
                            (np.float64, np.float64), (np.int64, np.float64)):
        assert erf(cp.ones(2, dtype=dtype)).dtype == expected
    np.testing.assert_allclose(erf(cp.asarray(np.array([0.5]))).get(), [0.5204998778])


def test_a_numba_ufunc_on_a_device_array_dispatches_to_cupyx():
    """CuPy looks ufuncs up by name in cupyx.scipy.special too: Numba's erf ufunc applied
    to a float16 device array gives cupyx's float64 result."""
    import math

    @numba.vectorize(["float32(float32)", "float64(float64)"])
    def erf(value):
        return math.erf(value)

    result = erf(cp.ones(2, dtype=np.float16))
    assert type(result) is cp.ndarray and result.dtype == np.float64
