"""A compiled forward with several outputs that need gradients (a model returning its
logits and its loss, a recurrent layer its output and its state): one node per output,
each replaying the backward recorded for it, freed together as the eager graph is."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_bits_equal

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn

# a step that falls back to eager fails the test
pytestmark = pytest.mark.filterwarnings("error:mg.compile")

VOCAB = 11


class LogitsAndLoss(nn.Module):
    """A language model in the style of nanoGPT: forward(ids, targets) returns the logits
    and, given targets, the loss, both needing gradients."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 8)
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(8, VOCAB)

    def forward(self, ids, targets=None):
        logits = self.head(self.dropout(F.gelu(self.embedding(ids))))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def _model_and_batch(dtype=mg.float32):
    mg.manual_seed(0)
    model = LogitsAndLoss().to(dtype)
    ids = mg.tensor(np.random.default_rng(0).integers(0, VOCAB, (4, 7)))
    return model, ids[:, :-1], ids[:, 1:]


def test_a_model_returning_logits_and_loss_trains_as_eager_bit_for_bit():
    runs = []
    for compile_model in (False, True):
        model, x, y = _model_and_batch()
        forward = mg.compile(model) if compile_model else model
        optimizer = mg.optim.AdamW(model.parameters(), lr=1e-2)
        mg.manual_seed(1)  # the dropout masks
        losses = []
        for _ in range(4):
            logits, loss = forward(x, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        runs.append([np.array(losses), *(p.numpy().copy() for p in model.parameters())])
        if compile_model:  # one plan, the backward of each output recorded
            (entry,) = [e for entries in forward._compiled_forward._plans.values()
                        for e in entries]
            assert len(entry.backwards) == 2
            assert type(logits.grad_fn).__name__ == type(loss.grad_fn).__name__ == \
                "CompiledFunction"
    for eager, compiled in zip(*runs, strict=True):
        assert_bits_equal(compiled, eager)


def _gradients(compile_model: bool, backward) -> list[np.ndarray]:
    """The parameters' gradients after `backward(logits, loss)` on the second call (the
    first captures), from the same weights, in float64."""
    model, x, y = _model_and_batch(mg.float64)
    model.eval()  # no dropout
    forward = mg.compile(model) if compile_model else model
    for _ in range(2):
        model.zero_grad()
        logits, loss = forward(x, y)
        backward(logits, loss)
    if compile_model:  # the last node to run without keeping the graph freed the arrays
        assert logits.grad_fn.shared.slots is None
    return [p.grad.numpy() for p in model.parameters()]


def test_gradients_into_both_outputs_are_summed_at_the_inputs():
    def both(logits, loss):
        (loss + 0.1 * logits.square().mean()).backward()

    eager, compiled = _gradients(False, both), _gradients(True, both)
    for want, got in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_each_output_backpropagates_alone_while_the_graph_is_retained():
    def one_then_other(logits, loss):
        loss.backward(retain_graph=True)
        logits[:, -1].sum().backward()

    eager, compiled = _gradients(False, one_then_other), _gradients(True, one_then_other)
    for want, got in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_a_backward_frees_the_other_outputs_graph_as_eager_does():
    messages = []
    for compile_model in (False, True):
        model, x, y = _model_and_batch()
        forward = mg.compile(model) if compile_model else model
        forward(x, y)  # the capture
        logits, loss = forward(x, y)
        loss.backward()
        with pytest.raises(RuntimeError, match="a second time") as raised:
            logits.sum().backward()
        messages.append(str(raised.value))
        if compile_model:  # and the arrays its backward would have read are gone
            assert logits.grad_fn.shared.slots is None
    assert "retain_graph=True" in messages[1]


def test_a_recurrent_layer_returning_its_output_and_state_is_one_plan():
    runs = []
    for compile_model in (False, True):
        mg.manual_seed(0)
        rnn = nn.GRU(5, 6, num_layers=2, batch_first=True)
        forward = mg.compile(rnn) if compile_model else rnn
        x = mg.randn(3, 4, 5)
        grads = []
        for _ in range(3):
            rnn.zero_grad()
            output, state = forward(x)
            assert state.requires_grad
            output.square().mean().backward()  # no gradient reaches the state
            grads.append([p.grad.numpy().copy() for p in rnn.parameters()])
        runs.append(grads)
    for eager, compiled in zip(*runs, strict=True):
        for want, got in zip(eager, compiled, strict=True):
            assert_bits_equal(got, want)


def test_one_tensor_returned_twice_is_one_output():
    weight = mg.tensor([1.5, -2.0, 0.5], requires_grad=True)

    @mg.compile
    def twice(x):
        y = (x * weight).tanh()
        return y, {"again": y}

    x = mg.tensor([0.1, 0.2, 0.3])
    for _ in range(2):
        weight.grad = None
        first, again = twice(x)
        assert again["again"] is first
        first.sum().backward()
    want = (1 - np.tanh(x.numpy() * weight.numpy()) ** 2) * x.numpy()
    np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-6)


def test_one_tensor_returned_twice_is_one_object_without_gradients_and_from_a_step():
    model = nn.Linear(3, 2)
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)

    @mg.compile
    def infer(x):
        with mg.no_grad():
            y = model(x).relu()
        return y, {"again": y}

    @mg.compile
    def step(x):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss, [loss]

    x = mg.randn(4, 3)
    for _ in range(3):  # the capture, the checked first replay, a replay
        y, again = infer(x)
        assert again["again"] is y
        loss, losses = step(x)
        assert losses[0] is loss
