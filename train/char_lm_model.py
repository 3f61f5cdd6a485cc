"""The language models of `python -m train.char_lm`, written once for minigrad and PyTorch
(`char_lm_class(mg)`, `char_lm_class(torch)`: the same code, the same state_dict names),
and sampling text from them.

    ids (B, T) -> Embedding -> LSTM | GRU | causal TransformerEncoder -> output layer
               -> logits (B, T, V): the scores of each position's next character

The Transformer adds a learned position embedding and runs pre-norm layers under the
causal mask of `nn.Transformer.generate_square_subsequent_mask` (position t attends to
0..t), then a final LayerNorm. The output layer is a Linear, or, with tied weights, the
embedding matrix itself plus a bias: logits = h E^T + b (Press & Wolf, 2017)."""

import functools
from collections.abc import Iterator
from dataclasses import asdict, dataclass

import numpy as np

MODEL_KINDS = ("lstm", "gru", "transformer")


@dataclass(frozen=True)
class ModelConfig:
    """kind: one of MODEL_KINDS; vocab_size: the alphabet's size; embedding: the width of
    the character embedding (the Transformer's d_model); hidden: the recurrent state's
    width (unused by the Transformer); layers; heads and feedforward: the Transformer's;
    context: the longest input (the Transformer's position table); dropout; tie_weights:
    the output layer is the embedding (needs hidden == embedding for the recurrent
    models)."""

    kind: str
    vocab_size: int
    embedding: int
    hidden: int
    layers: int
    heads: int
    feedforward: int
    context: int
    dropout: float
    tie_weights: bool

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def output_width(self) -> int:
        return self.embedding if self.kind == "transformer" else self.hidden


@functools.cache
def char_lm_class(library):
    """The CharLM Module class of `library` (minigrad or torch)."""
    nn = library.nn
    F = nn.functional

    class CharLM(nn.Module):
        """forward(ids (B, T), state=None) -> (logits (B, T, V), state): the recurrent
        models take and return their (h, c) or h state (None starts from zeros); the
        Transformer sees only `ids` and returns None."""

        def __init__(self, config: ModelConfig) -> None:
            super().__init__()
            self.config = config
            self.embedding = nn.Embedding(config.vocab_size, config.embedding)
            self.dropout = nn.Dropout(config.dropout)
            if config.kind == "transformer":
                self.position = nn.Embedding(config.context, config.embedding)
                layer = nn.TransformerEncoderLayer(
                    config.embedding, config.heads, config.feedforward, config.dropout,
                    batch_first=True, norm_first=True)
                self.encoder = nn.TransformerEncoder(
                    layer, config.layers, norm=nn.LayerNorm(config.embedding),
                    enable_nested_tensor=False)
            else:
                recurrent = nn.LSTM if config.kind == "lstm" else nn.GRU
                between_layers = config.dropout if config.layers > 1 else 0.0
                self.rnn = recurrent(config.embedding, config.hidden, config.layers,
                                     batch_first=True, dropout=between_layers)
            if config.tie_weights:
                self.output_bias = nn.Parameter(library.zeros(config.vocab_size))
            else:
                self.output = nn.Linear(config.output_width, config.vocab_size)

        def forward(self, ids, state=None):
            x = self.embedding(ids)
            if self.config.kind == "transformer":
                length = ids.shape[1]
                x = x + self.position(library.arange(length, device=ids.device))
                causal = nn.Transformer.generate_square_subsequent_mask(length,
                                                                        device=ids.device)
                x = self.encoder(self.dropout(x), mask=causal)
            else:
                x, state = self.rnn(self.dropout(x), state)
            x = self.dropout(x)
            if self.config.tie_weights:
                return F.linear(x, self.embedding.weight, self.output_bias), state
            return self.output(x), state

    return CharLM


def sample_ids(model, prompt_ids: list[int], temperature: float, seed: int,
               device) -> Iterator[int]:
    """Ids drawn one at a time after `prompt_ids` from a minigrad CharLM, without end: each
    from softmax(logits / temperature) by a NumPy generator seeded by `seed`, so the same
    seed gives the same text whatever the global RNG. The recurrent models carry their
    state from character to character; the Transformer reads the last `context` ids again
    for each one."""
    import minigrad as mg  # deferred: the module also serves PyTorch's twin

    model.eval()
    generator = np.random.default_rng(seed)
    history = list(prompt_ids)
    state, feed = None, history
    while True:
        if model.config.kind == "transformer":
            feed = history[-model.config.context:]
        with mg.no_grad():
            logits, state = model(mg.tensor([feed], device=device), state)
        scores = logits.cpu().numpy()[0, -1].astype(np.float64) / temperature
        weights = np.exp(scores - scores.max())  # the max first: exp never overflows
        next_id = int(generator.choice(len(weights), p=weights / weights.sum()))
        yield next_id
        history.append(next_id)
        feed = [next_id]
