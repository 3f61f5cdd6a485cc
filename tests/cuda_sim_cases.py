"""The numba.cuda kernels of minigrad/kernels/cuda against their reference twins, run in
Numba's CUDA simulator on NumPy arrays.

The simulator must be switched on before numba.cuda is first imported, so this module is
not collected by a plain `pytest` run (its name does not start with test_): the test in
test_cuda_kernels_sim.py runs it in a subprocess with NUMBA_ENABLE_CUDASIM=1. Run by hand
without that variable it skips. The simulator runs every GPU thread as a Python thread,
so inputs stay small: a few rows, at most a few blocks.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import config

from minigrad.kernels import cuda as gpu_kernels
from minigrad.kernels.matmul import matmul_twin
from minigrad.kernels.softmax import (
    log_softmax_backward_twin,
    log_softmax_twin,
    softmax_backward_twin,
    softmax_twin,
)

if not config.ENABLE_CUDASIM:
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run through test_cuda_kernels_sim.py)",
                allow_module_level=True)

SIMULATOR = settings(max_examples=6, deadline=None, derandomize=True)
TOLERANCE = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-13)}
dtypes = st.sampled_from([np.float32, np.float64])


def _normal(seed: int, shape: tuple, dtype, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _check(kernel_out: np.ndarray, twin_out: np.ndarray, dtype) -> None:
    assert kernel_out.shape == twin_out.shape
    assert kernel_out.dtype == twin_out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(kernel_out, twin_out, **TOLERANCE[dtype])


# rows of 1..70 elements: blocks of 32, 64 and 128 threads, some threads idle
row_shapes = st.tuples(st.integers(1, 3), st.integers(1, 70))


@SIMULATOR
@given(shape=row_shapes, dtype=dtypes, seed=st.integers(0, 2**16), scale=st.sampled_from([1, 30]))
def test_softmax_forward_kernels_match_twins(shape, dtype, seed, scale):
    x = _normal(seed, shape, dtype, scale)
    _check(gpu_kernels.softmax(x), softmax_twin(x), dtype)
    _check(gpu_kernels.log_softmax(x), log_softmax_twin(x), dtype)


@SIMULATOR
@given(shape=row_shapes, dtype=dtypes, seed=st.integers(0, 2**16))
def test_softmax_backward_kernels_match_twins(shape, dtype, seed):
    x = _normal(seed, shape, dtype)
    g = _normal(seed + 1, shape, dtype)
    y, z = softmax_twin(x), log_softmax_twin(x)
    _check(gpu_kernels.softmax_backward(y, g), softmax_backward_twin(y, g), dtype)
    _check(gpu_kernels.log_softmax_backward(z, g), log_softmax_backward_twin(z, g), dtype)


def test_rows_longer_than_a_block_are_strided():
    x = _normal(0, (1, 300), np.float32, scale=5)
    _check(gpu_kernels.softmax(x), softmax_twin(x), np.float32)


def test_masked_rows_follow_the_twins_conventions():
    x = _normal(1, (3, 6), np.float32)
    x[0] = -np.inf  # a fully masked row
    x[1, :4] = -np.inf
    y, z = gpu_kernels.softmax(x), gpu_kernels.log_softmax(x)
    np.testing.assert_array_equal(y[0], np.zeros(6, np.float32))
    np.testing.assert_array_equal(z[0], np.full(6, -np.inf, np.float32))
    _check(y, softmax_twin(x), np.float32)
    _check(z[1:], log_softmax_twin(x)[1:], np.float32)


def test_softmax_of_higher_rank_input_works_over_the_last_axis():
    x = _normal(2, (2, 2, 5), np.float64)
    _check(gpu_kernels.softmax(x), softmax_twin(x), np.float64)


@st.composite
def matmul_operands(draw):
    """Shapes with k spanning several 16-wide tiles, optional broadcast batch dims."""
    m, k, n = draw(st.integers(1, 17)), draw(st.integers(1, 40)), draw(st.integers(1, 16))
    batch_a, batch_b = draw(st.sampled_from([((), ()), ((2,), ()), ((2,), (2,)),
                                             ((2, 1), (3,)), ((), (2,))]))
    return batch_a + (m, k), batch_b + (k, n)


@SIMULATOR
@given(shapes=matmul_operands(), dtype=dtypes, seed=st.integers(0, 2**16))
def test_matmul_kernel_matches_twin(shapes, dtype, seed):
    a = _normal(seed, shapes[0], dtype)
    b = _normal(seed + 1, shapes[1], dtype)
    np.testing.assert_allclose(gpu_kernels.matmul(a, b), matmul_twin(a, b),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("shapes", [((7,), (7, 3)), ((5, 7), (7,)), ((7,), (7,)), ((3, 0), (0, 2))])
def test_matmul_kernel_handles_vectors_and_empty_products(shapes):
    a = _normal(3, shapes[0], np.float32)
    b = _normal(4, shapes[1], np.float32)
    expected = matmul_twin(a, b)
    out = gpu_kernels.matmul(a, b)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_matmul_kernel_reads_transposed_views():
    a = _normal(5, (6, 5), np.float64)
    np.testing.assert_allclose(gpu_kernels.matmul(a.T, a), a.T @ a, rtol=1e-12)


def test_mismatched_shapes_raise_value_error():
    with pytest.raises(ValueError, match="cannot be multiplied"):
        gpu_kernels.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    with pytest.raises(ValueError, match="one shape"):
        gpu_kernels.softmax_backward(np.ones((2, 3)), np.ones((2, 4)))


def test_matmul_kernel_strides_over_row_and_batch_tiles_beyond_the_grid(monkeypatch):
    """Grid y and z are capped (65535 blocks on a GPU): blocks then loop over further row
    tiles and batch entries. Caps of 2 make 5 row tiles and 3 batch entries loop here."""
    from minigrad.kernels.cuda import gemm

    monkeypatch.setattr(gemm, "MAX_GRID_Y", 2)
    monkeypatch.setattr(gemm, "MAX_GRID_Z", 2)
    a = _normal(6, (3, 70, 20), np.float64)
    b = _normal(7, (3, 20, 9), np.float64)
    np.testing.assert_allclose(gpu_kernels.matmul(a, b), a @ b, rtol=1e-12)
