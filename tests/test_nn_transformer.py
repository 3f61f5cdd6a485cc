"""nn.TransformerEncoderLayer, TransformerDecoderLayer, TransformerEncoder,
TransformerDecoder and Transformer against torch's: the same state_dict names, and from the
same weights (loaded either way) the same outputs and gradients of the inputs and of every
parameter in float64, across layouts, norm placement, activations and masks."""
from __future__ import annotations

import numpy as np
import pytest
from torch_twin import (
    assert_close,
    assert_parameter_grads_match,
    backward_both,
    direction_of,
    pair,
    pairs,
    share_weights,
    torch,
)

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

# torch warns about its fused path, unused here, and about the float causal mask with a
# bool padding mask that its own tutorial passes
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),
              pytest.mark.filterwarnings("ignore:Support for mismatched")]

D_MODEL, NHEAD, FEEDFORWARD, BATCH, SRC, TGT = 8, 2, 12, 2, 5, 4
ACTIVATIONS = {  # ours, torch's
    "relu": ("relu", "relu"),
    "gelu": ("gelu", "gelu"),
    "silu": (F.silu, torch.nn.functional.silu),
}


@pytest.fixture(autouse=True)
def _reference_path():
    """torch's fused inference path computes in another order (and returns zeros at padded
    positions); its reference path is the one we compare against."""
    torch.backends.mha.set_fastpath_enabled(False)
    yield
    torch.backends.mha.set_fastpath_enabled(True)


def padding(rng, length: int, batched: bool) -> np.ndarray:
    """A bool key padding mask, True at padding: a random tail of each sequence (at
    least one position kept)."""
    kept = rng.integers(1, length + 1, size=BATCH if batched else 1)
    mask = np.arange(length)[None, :] >= kept[:, None]
    return mask if batched else mask[0]


def as_float(mask: np.ndarray) -> np.ndarray:
    return np.where(mask, -np.inf, 0.0)


def causal(length: int) -> np.ndarray:
    return nn.Transformer.generate_square_subsequent_mask(length, dtype=mg.float64).numpy()


def sequence(rng, length: int, batched: bool, batch_first: bool) -> np.ndarray:
    if not batched:
        return rng.standard_normal((length, D_MODEL))
    shape = (BATCH, length, D_MODEL) if batch_first else (length, BATCH, D_MODEL)
    return rng.standard_normal(shape)


def twins(ours_class, theirs_class, direction, activation="relu", **options):
    ours_activation, theirs_activation = ACTIVATIONS[activation]
    ours = ours_class(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0, activation=ours_activation,
                      **options).double()
    theirs = theirs_class(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0,
                          activation=theirs_activation, dtype=torch.float64, **options)
    share_weights(ours, theirs, direction)
    return ours, theirs


def run_and_compare(ours, theirs, inputs: dict, masks: dict, rng) -> None:
    """Call both on the same inputs (leaves requiring grad) and masks; compare outputs,
    then the gradients of the inputs and parameters for a random upstream gradient."""
    leaves = {name: pair(array) for name, array in inputs.items()}
    arguments, arguments_t = pairs(masks)
    out = ours(*(ours_leaf for ours_leaf, _ in leaves.values()), **arguments)
    out_t = theirs(*(theirs_leaf for _, theirs_leaf in leaves.values()), **arguments_t)
    assert_close(out, out_t)
    backward_both((out,), (out_t,), rng)
    for leaf, leaf_t in leaves.values():
        assert_close(leaf.grad, leaf_t.grad)
    assert_parameter_grads_match(ours, theirs)


# (constructor arguments, activation, mask kinds, batched)
ENCODER_CASES = [
    ({}, "relu", "", True),
    ({"batch_first": True}, "gelu", "bool", True),
    ({"norm_first": True}, "relu", "float", True),
    ({"batch_first": True, "norm_first": True}, "silu", "bool", True),
    ({"bias": False, "layer_norm_eps": 1e-3}, "relu", "float", True),
    ({"norm_first": True}, "gelu", "bool", False),
    ({}, "relu", "causal", True),
]


@pytest.mark.parametrize("options, activation, mask_kind, batched", ENCODER_CASES)
def test_encoder_layer_matches_torch(options, activation, mask_kind, batched):
    index = ENCODER_CASES.index((options, activation, mask_kind, batched))
    rng = np.random.default_rng(index)
    ours, theirs = twins(nn.TransformerEncoderLayer, torch.nn.TransformerEncoderLayer,
                         direction_of(index), activation, **options)
    src = sequence(rng, SRC, batched, options.get("batch_first", False))
    masks = {}
    if mask_kind == "causal":
        masks = {"src_mask": causal(SRC), "is_causal": True}
    elif mask_kind:
        attention = rng.random((SRC, SRC)) < 0.3
        attention[:, 0] = False
        key_padding = padding(rng, SRC, batched)
        convert = as_float if mask_kind == "float" else np.asarray
        masks = {"src_mask": convert(attention), "src_key_padding_mask": convert(key_padding)}
    run_and_compare(ours, theirs, {"src": src}, masks, rng)


DECODER_CASES = [
    ({}, "relu", "", True),
    ({"batch_first": True}, "relu", "bool", True),
    ({"norm_first": True}, "gelu", "float", True),
    ({"batch_first": True, "norm_first": True, "bias": False}, "silu", "float", True),
    ({}, "gelu", "bool", False),
]


@pytest.mark.parametrize("options, activation, mask_kind, batched", DECODER_CASES)
def test_decoder_layer_matches_torch(options, activation, mask_kind, batched):
    index = DECODER_CASES.index((options, activation, mask_kind, batched))
    rng = np.random.default_rng(index)
    ours, theirs = twins(nn.TransformerDecoderLayer, torch.nn.TransformerDecoderLayer,
                         direction_of(index), activation, **options)
    batch_first = options.get("batch_first", False)
    inputs = {"tgt": sequence(rng, TGT, batched, batch_first),
              "memory": sequence(rng, SRC, batched, batch_first)}
    masks = {}
    if mask_kind:
        memory_mask = rng.random((TGT, SRC)) < 0.3
        memory_mask[:, 0] = False
        convert = as_float if mask_kind == "float" else np.asarray
        masks = {"tgt_mask": causal(TGT) if mask_kind == "float" else np.triu(
                     np.ones((TGT, TGT), bool), 1),
                 "memory_mask": convert(memory_mask),
                 "tgt_key_padding_mask": convert(padding(rng, TGT, batched)),
                 "memory_key_padding_mask": convert(padding(rng, SRC, batched)),
                 "tgt_is_causal": True}
    run_and_compare(ours, theirs, inputs, masks, rng)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_match_torch(norm_first):
    """Two-layer stacks, one with and one without a final norm; the layers are deep copies,
    loaded with different weights from the twin."""
    rng = np.random.default_rng(11)
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0,
                                       norm_first=norm_first)
    layer_t = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0,
                                               norm_first=norm_first, dtype=torch.float64)
    encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D_MODEL)).double()
    encoder_t = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(
        D_MODEL, dtype=torch.float64), enable_nested_tensor=False)
    share_weights(encoder, encoder_t, "torch_to_ours")
    key_padding = padding(rng, SRC, True)
    run_and_compare(encoder, encoder_t, {"src": sequence(rng, SRC, True, False)},
                    {"mask": causal(SRC), "src_key_padding_mask": key_padding}, rng)

    layer = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0,
                                       norm_first=norm_first, batch_first=True)
    layer_t = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FEEDFORWARD, dropout=0.0,
                                               norm_first=norm_first, batch_first=True,
                                               dtype=torch.float64)
    decoder = nn.TransformerDecoder(layer, 2).double()
    decoder_t = torch.nn.TransformerDecoder(layer_t, 2)
    share_weights(decoder, decoder_t, "ours_to_torch")
    inputs = {"tgt": sequence(rng, TGT, True, True), "memory": sequence(rng, SRC, True, True)}
    run_and_compare(decoder, decoder_t, inputs,
                    {"tgt_mask": causal(TGT), "memory_key_padding_mask": key_padding}, rng)


TRANSFORMER_CASES = [
    ({}, True),
    ({"batch_first": True, "norm_first": True, "activation": "gelu"}, True),
    ({"norm_first": True, "bias": False}, False),
]


@pytest.mark.parametrize("options, batched", TRANSFORMER_CASES)
def test_transformer_matches_torch(options, batched):
    """One layer per stack (the stacks are compared above), each stack's final norm."""
    index = TRANSFORMER_CASES.index((options, batched))
    rng = np.random.default_rng(index)
    ours = nn.Transformer(D_MODEL, NHEAD, 1, 1, FEEDFORWARD, dropout=0.0, **options).double()
    theirs = torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FEEDFORWARD, dropout=0.0,
                                  dtype=torch.float64, **options)
    share_weights(ours, theirs, direction_of(index))
    batch_first = options.get("batch_first", False)
    inputs = {"src": sequence(rng, SRC, batched, batch_first),
              "tgt": sequence(rng, TGT, batched, batch_first)}
    source_padding = padding(rng, SRC, batched)
    masks = {"tgt_mask": causal(TGT), "src_key_padding_mask": source_padding,
             "tgt_key_padding_mask": padding(rng, TGT, batched),
             "memory_key_padding_mask": source_padding, "tgt_is_causal": True}
    run_and_compare(ours, theirs, inputs, masks, rng)


@pytest.mark.parametrize("options", [{}, {"norm_first": True}, {"bias": False}])
def test_transformer_state_dict_is_torchs(options):
    ours = nn.Transformer(D_MODEL, NHEAD, 2, 3, FEEDFORWARD, **options).state_dict()
    theirs = torch.nn.Transformer(D_MODEL, NHEAD, 2, 3, FEEDFORWARD, **options).state_dict()
    assert list(ours) == list(theirs)
    assert [tuple(v.shape) for v in ours.values()] == [tuple(v.shape) for v in theirs.values()]


@pytest.mark.parametrize("size", [1, 5])
def test_generate_square_subsequent_mask_is_torchs(size):
    mask = nn.Transformer.generate_square_subsequent_mask(size)
    expected = torch.nn.Transformer.generate_square_subsequent_mask(size)
    assert mask.dtype == mg.float32
    np.testing.assert_array_equal(mask.numpy(), expected.numpy())
    model = nn.Transformer(D_MODEL, NHEAD, 1, 1, FEEDFORWARD)
    as_double = model.generate_square_subsequent_mask(size, dtype=mg.float64)
    assert as_double.dtype == mg.float64
    np.testing.assert_array_equal(as_double.numpy(), expected.double().numpy())


def test_custom_encoder_and_decoder_replace_the_stacks():
    """custom_encoder/custom_decoder are used as given; the Xavier reset still covers them."""
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FEEDFORWARD), 1)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(D_MODEL, NHEAD, FEEDFORWARD), 1)
    model = nn.Transformer(D_MODEL, NHEAD, custom_encoder=encoder, custom_decoder=decoder)
    assert model.encoder is encoder and model.decoder is decoder
    theirs = torch.nn.Transformer(
        D_MODEL, NHEAD,
        custom_encoder=torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(
            D_MODEL, NHEAD, FEEDFORWARD), 1, enable_nested_tensor=False),
        custom_decoder=torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(
            D_MODEL, NHEAD, FEEDFORWARD), 1))
    assert list(model.state_dict()) == list(theirs.state_dict())
