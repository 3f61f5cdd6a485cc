"""Draw the pictures of "The Illustrated Transformer" from a trained toy model's own
weights and activations.

    python -m train.figures --checkpoint runs/toy_translate.safetensors --out docs/figures
    python -m train.figures --checkpoint CKPT --out DIR --sentence "le chien noir mange"

writes into DIR, for the sentence and the model's greedy translation of it:

    positional_encoding.png        the sinusoid table, and a few of its dimensions
    encoder_self_attention.png     every encoder layer and head over the sentence
    decoder_self_attention.png     masked self-attention over <s> + the translation
    encoder_decoder_attention.png  every decoder layer, per head and the mean of heads
    decoding.png                   greedy decoding and beam search as trees of candidates
    output_distribution.png        logits and softmax at the least certain greedy step
    computation_graph.png          minigrad's graph of a tiny self-attention (needs
                                   Graphviz's `dot`; computation_graph.dot is always written)
"""
# ruff: noqa: E402  (the thread setting below must come before NumPy is imported)

import os

# one OpenBLAS thread: these matrices are tiny (see train/toy_translate.py)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from collections.abc import Sequence

from train.checkpoint import load_model
from train.data import tokenize_french
from train.plots import (
    cross_attention_figure,
    decoder_self_attention_figure,
    encoder_self_attention_figure,
    layer_stack,
    save_figure,
    sentence_attention,
)
from train.plots_decoding import (
    decoding_figure,
    least_certain_step,
    output_distribution_figure,
    trace_beam_search,
    trace_greedy,
)
from train.plots_model import GRAPHVIZ_INSTALL, positional_encoding_figure, write_computation_graph
from train.vocab import Vocab

__all__ = ["DEFAULT_SENTENCE", "draw_figures", "main"]

# an adjective after its noun in French, before it in English: "the black dog eats"
DEFAULT_SENTENCE = "le chien noir mange"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m train.figures",
        description="Draw the Illustrated Transformer's figures from a trained checkpoint of "
                    "python -m train.toy_translate.")
    parser.add_argument("--checkpoint", required=True, metavar="PATH",
                        help="a checkpoint written by python -m train.toy_translate")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="folder for the PNG files (created if missing)")
    parser.add_argument("--sentence", default=DEFAULT_SENTENCE,
                        help=f"the French sentence to follow (default {DEFAULT_SENTENCE!r})")
    parser.add_argument("--beam-size", type=int, default=2, help="default 2")
    parser.add_argument("--top-beams", type=int, default=2, help="default 2")
    parser.add_argument("--step", type=int, metavar="N",
                        help="the greedy decoding step whose output distribution is drawn, "
                             "from 1 (default: the step the model is least sure of)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status."""
    args = parse_args(argv)
    if not 1 <= args.top_beams <= args.beam_size:
        return _fail(f"need 1 <= --top-beams <= --beam-size, got --top-beams {args.top_beams}"
                     f" and --beam-size {args.beam_size}")
    if not os.path.isfile(args.checkpoint):
        return _fail(f"no checkpoint at {args.checkpoint}; train one first with "
                     "python -m train.toy_translate")
    try:
        model, src_vocab, tgt_vocab = load_model(args.checkpoint, "cpu")
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        return _fail(f"cannot read the checkpoint {args.checkpoint}: {error}")
    source = tokenize_french(args.sentence)
    unknown = src_vocab.unknown_words(source)
    if not source or unknown:
        words = ", ".join(repr(word) for word in unknown) or "none at all"
        return _fail(f"cannot draw {args.sentence!r}: words not in the French vocabulary: "
                     f"{words}")
    try:
        figures = draw_figures(model, source, src_vocab, tgt_vocab, args.beam_size,
                               args.top_beams, args.step)
    except ValueError as error:  # a --step past the translation's last
        return _fail(str(error))
    try:
        os.makedirs(args.out, exist_ok=True)
        for name, figure in figures.items():
            print(save_figure(figure, os.path.join(args.out, name + ".png")))
        graph = write_computation_graph(args.out)
    except OSError as error:
        return _fail(f"cannot write to {args.out}: {error}")
    if graph is None:
        print(f"figures: computation_graph.png needs Graphviz's `dot` ({GRAPHVIZ_INSTALL}); "
              f"its DOT text is in {os.path.join(args.out, 'computation_graph.dot')}",
              file=sys.stderr)
    else:
        print(graph)
    return 0


def draw_figures(model, source: Sequence[str], src_vocab: Vocab, tgt_vocab: Vocab,
                 beam_size: int = 2, top_beams: int = 2, step: int | None = None) -> dict:
    """The matplotlib figures of a tokenized French source and the model's greedy
    translation of it, by file name (without .png). The output distribution is that of
    greedy step `step` (from 1; by default the least certain one). The computation graph
    is separate (`write_computation_graph`), as Graphviz draws it."""
    source_ids = src_vocab.encode(source)
    greedy = trace_greedy(model, source_ids)
    beam = trace_beam_search(model, source_ids, beam_size, top_beams)
    translation = tgt_vocab.decode(greedy.hypotheses[0].tokens)
    attention = sentence_attention(model, source, translation, src_vocab, tgt_vocab)
    if step is None:
        step = least_certain_step(greedy) + 1
    elif not 1 <= step <= len(greedy.steps):
        raise ValueError(f"step {step} is out of range: the greedy translation of "
                         f"{' '.join(source)!r} took {len(greedy.steps)} steps")
    return {
        "positional_encoding": positional_encoding_figure(model.positional.pe.numpy()),
        "encoder_self_attention": encoder_self_attention_figure(attention, source),
        "decoder_self_attention": decoder_self_attention_figure(attention, translation),
        "encoder_decoder_attention": cross_attention_figure(
            layer_stack(attention, "decoder", "cross_attn"), source, translation),
        # every hypothesis shows one candidate more than the beam keeps
        "decoding": decoding_figure(greedy, beam, tgt_vocab, source, beam_size,
                                    shown=beam_size + 1),
        "output_distribution": output_distribution_figure(greedy.steps[step - 1], tgt_vocab,
                                                          step_number=step),
    }


def _fail(message: str) -> int:
    # one line, whatever the message's own line breaks (a state_dict mismatch has several)
    print("figures: " + " ".join(message.split()), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
