"""nn.utils.rnn: pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
unpad_sequence, unpack_sequence and PackedSequence, by hand, against PyTorch, with
gradients through packing and padding, and their errors."""
import numpy as np
import pytest
from helpers import check_grad

import minigrad as mg
from minigrad.nn.utils import rnn as rnn_utils
from minigrad.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)


def _sequences(lengths, features=2, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, features)) for n in lengths]


def test_nn_utils_keeps_clip_grad_norm_and_adds_rnn():
    assert mg.nn.utils.rnn is rnn_utils
    assert callable(mg.nn.utils.clip_grad_norm_)
    from minigrad.nn.utils import clip_grad_norm_, zero_grads  # noqa: F401  (import paths)


def test_packing_by_hand():
    """Time step by time step, longest first: step 0 of both, step 1 of both, step 2."""
    padded = mg.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 0.0]])  # (T=3, B=2)
    packed = pack_padded_sequence(padded, [3, 2])
    assert packed.data.tolist() == [1.0, 4.0, 2.0, 5.0, 3.0]
    assert packed.batch_sizes.tolist() == [2, 2, 1]
    assert packed.batch_sizes.dtype == mg.int64 and packed.batch_sizes.device == "cpu"
    assert packed.sorted_indices is None and packed.unsorted_indices is None
    unsorted = pack_padded_sequence(padded[:, [1, 0]], [2, 3], enforce_sorted=False)
    assert unsorted.data.tolist() == [1.0, 4.0, 2.0, 5.0, 3.0]
    assert unsorted.sorted_indices.tolist() == [1, 0]
    assert unsorted.unsorted_indices.tolist() == [1, 0]
    again, lengths = pad_packed_sequence(unsorted, padding_value=-1.0, total_length=4)
    assert again.tolist() == [[4.0, 1.0], [5.0, 2.0], [-1.0, 3.0], [-1.0, -1.0]]
    assert lengths.tolist() == [2, 3] and lengths.dtype == mg.int64


def test_pad_sequence_by_hand_on_both_sides():
    a, b = mg.tensor([1.0, 2.0, 3.0]), mg.tensor([4.0])
    assert pad_sequence([a, b]).tolist() == [[1.0, 4.0], [2.0, 0.0], [3.0, 0.0]]
    assert pad_sequence([a, b], batch_first=True, padding_value=9.0,
                        padding_side="left").tolist() == [[1.0, 2.0, 3.0], [9.0, 9.0, 4.0]]


def test_packed_sequence_infers_the_inverse_order_and_moves_with_to():
    data = mg.tensor([[1.0], [2.0], [3.0]])
    packed = PackedSequence(data, mg.tensor([2, 1]), mg.tensor([2, 0, 1]))
    assert packed.unsorted_indices.tolist() == [1, 2, 0]
    as_double = packed.to(mg.float64)
    assert as_double.data.dtype == mg.float64 and isinstance(as_double, PackedSequence)
    assert as_double.sorted_indices.tolist() == [2, 0, 1]
    assert packed.to(mg.float32) is packed
    data_, batch_sizes, sorted_indices, unsorted_indices = packed
    assert data_ is data and batch_sizes.tolist() == [2, 1]


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_round_trips(enforce_sorted):
    sequences = [mg.tensor(s) for s in _sequences([4, 3, 3, 1] if enforce_sorted
                                                  else [3, 4, 1, 3])]
    packed = pack_sequence(sequences, enforce_sorted=enforce_sorted)
    for ours, original in zip(unpack_sequence(packed), sequences):
        np.testing.assert_array_equal(ours.numpy(), original.numpy())
    lengths = [s.shape[0] for s in sequences]
    padded = pad_sequence(sequences, batch_first=True)
    for ours, original in zip(unpad_sequence(padded, mg.tensor(lengths), batch_first=True),
                              sequences):
        np.testing.assert_array_equal(ours.numpy(), original.numpy())


def test_gradient_reaches_valid_steps_only():
    """Packing reads each valid step once: its gradient is the upstream row there and
    zero on the padding."""
    padded = mg.tensor(np.arange(12.0).reshape(3, 2, 2), requires_grad=True)
    packed = pack_padded_sequence(padded, [1, 3], enforce_sorted=False)
    upstream = np.arange(1.0, 9.0).reshape(4, 2)
    packed.data.backward(mg.tensor(upstream))
    expected = np.zeros((3, 2, 2))
    # packed rows: (t0, b1), (t0, b0), (t1, b1), (t2, b1)
    for row, (t, b) in enumerate([(0, 1), (0, 0), (1, 1), (2, 1)]):
        expected[t, b] = upstream[row]
    np.testing.assert_array_equal(padded.grad.numpy(), expected)


@pytest.mark.parametrize("batch_first", [False, True])
def test_gradients_through_pack_and_pad_match_finite_differences(batch_first):
    rng = np.random.default_rng(1)
    shape = (3, 4, 2) if batch_first else (4, 3, 2)
    x = mg.tensor(rng.standard_normal(shape), requires_grad=True)

    def through_packing(x):
        packed = pack_padded_sequence(x, [2, 4, 1], batch_first=batch_first,
                                      enforce_sorted=False)
        return pad_packed_sequence(packed, batch_first=batch_first, padding_value=0.5,
                                   total_length=5)[0] * 3.0

    check_grad(through_packing, x)
    pieces = [mg.tensor(rng.standard_normal((n, 2)), requires_grad=True) for n in (2, 3)]
    check_grad(lambda a, b: pad_sequence([a, b], batch_first, 1.5, "left") ** 2, *pieces)


@pytest.mark.parametrize("padding_side", ["left", "right"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    torch = pytest.importorskip("torch")
    sequences = _sequences([3, 0, 5, 2], features=3)
    ours = pad_sequence([mg.tensor(s) for s in sequences], batch_first, -2.0, padding_side)
    theirs = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in sequences],
                                             batch_first, -2.0, padding_side)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("total_length", [None, 8])
@pytest.mark.parametrize("lengths, enforce_sorted", [
    ([6, 4, 4, 1], True), ([2, 6, 1, 6], False), ([3, 3, 3, 3], False)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_packed_match_torch(batch_first, lengths, enforce_sorted, total_length):
    torch = pytest.importorskip("torch")
    padded = np.random.default_rng(2).standard_normal((4, 6, 2) if batch_first else (6, 4, 2))
    ours = pack_padded_sequence(mg.tensor(padded), mg.tensor(lengths), batch_first,
                                enforce_sorted)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(padded),
                                                     torch.tensor(lengths), batch_first,
                                                     enforce_sorted)
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    for field in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        mine, reference = getattr(ours, field), getattr(theirs, field)
        assert (mine is None) == (reference is None)
        assert mine is None or mine.tolist() == reference.tolist()
    again, again_lengths = pad_packed_sequence(ours, batch_first, 7.0, total_length)
    reference, reference_lengths = torch.nn.utils.rnn.pad_packed_sequence(
        theirs, batch_first, 7.0, total_length)
    np.testing.assert_array_equal(again.numpy(), reference.numpy())
    assert again_lengths.tolist() == reference_lengths.tolist()


ERRORS = [
    (lambda: pack_padded_sequence(mg.zeros(3, 2, 4), [2, 3]), RuntimeError,
     "must be sorted in decreasing order when `enforce_sorted` is True"),
    (lambda: pack_padded_sequence(mg.zeros(3, 2, 4), [3, 0], enforce_sorted=False),
     RuntimeError, "Length of all samples has to be greater than 0"),
    (lambda: pack_padded_sequence(mg.zeros(3, 2, 4), [3, 2, 1]), RuntimeError,
     r"Expected `len\(lengths\)` to be equal to batch_size, but got 3 \(batch_size=2\)"),
    (lambda: pack_padded_sequence(mg.zeros(3, 2, 4), [4, 2]), ValueError,
     r"lengths \[4, 2\] exceed the 3 time steps of the input of shape \(3, 2, 4\)"),
    (lambda: pack_padded_sequence(mg.zeros(3, 2), mg.tensor([3.0, 2.0])), RuntimeError,
     "'lengths' argument should be a 1D integer tensor, but got a 1D minigrad.float32"),
    (lambda: pack_padded_sequence(mg.zeros(3, 2), [3, 2.5]), TypeError,
     r"pack_padded_sequence: lengths must be integers, got \[3, 2.5\]"),
    (lambda: pack_padded_sequence(mg.zeros(3), [3]), ValueError,
     "pack_padded_sequence: input must have a time and a batch dim"),
    (lambda: pad_sequence([]), RuntimeError, "pad_sequence: received an empty list"),
    (lambda: pad_sequence([mg.zeros(2, 3), mg.zeros(3, 4)]), RuntimeError,
     r"pad_sequence: .* trailing dims \(3,\); got shapes \[\(2, 3\), \(3, 4\)\]"),
    (lambda: pad_sequence([mg.zeros(2)], padding_side="middle"), ValueError,
     "Expected padding_side to be one of left or right, but got middle"),
    (lambda: pad_packed_sequence(pack_padded_sequence(mg.zeros(5, 2), [5, 3]),
                                 total_length=4), ValueError,
     "total_length=4 and max sequence length being 5"),
]


@pytest.mark.parametrize("make, error, message", ERRORS)
def test_misuse_raises_pytorchs_error_naming_the_function(make, error, message):
    with pytest.raises(error, match=message):
        make()
