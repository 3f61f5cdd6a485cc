"""Graphviz DOT text of the graph behind a tensor, for people studying the engine.

    print(mg.viz.to_dot(loss))          # paste into any Graphviz viewer
    mg.viz.render(loss, "graph.svg")    # needs the `dot` program installed
"""
from __future__ import annotations

import shutil
import subprocess

from minigrad.nn.parameter import Parameter


def to_dot(tensor, name: str = "output") -> str:
    """DOT text: one box per op (name, output shape and dtype), one ellipse per leaf
    (parameters drawn bold, tensors that require grad in blue), edges input -> op."""
    lines = ["digraph minigrad {", "  rankdir=BT;", '  node [fontname="monospace"];']
    ids: dict[int, str] = {}

    def node_id(obj) -> str:
        return ids.setdefault(id(obj), f"n{len(ids)}")

    def describe(t) -> str:
        return f"{tuple(t.shape)} {t.dtype.name}"

    lines.append(f'  {node_id(tensor)} [label="{name}\\n{describe(tensor)}", shape=note];')
    if tensor.grad_fn is None:
        return "\n".join(lines + ["}"])
    if tensor.grad_fn._freed:
        raise RuntimeError("to_dot: the graph behind this tensor was freed by backward(); "
                           "draw it before backward, or pass retain_graph=True to backward")
    lines.append(f"  {node_id(tensor.grad_fn)} -> {node_id(tensor)};")
    stack, seen = [(tensor.grad_fn, tensor)], set()
    while stack:
        fn, out = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        lines.append(f'  {node_id(fn)} [label="{fn.name}\\n{describe(out)}", shape=box];')
        for inp in fn.inputs:
            if inp.grad_fn is not None:
                lines.append(f"  {node_id(inp.grad_fn)} -> {node_id(fn)};")
                stack.append((inp.grad_fn, inp))
            else:
                lines.append(_leaf_line(node_id(inp), inp, describe(inp)))
                lines.append(f"  {node_id(inp)} -> {node_id(fn)};")
    return "\n".join(dict.fromkeys(lines)) + "\n}"


def _leaf_line(identifier: str, leaf, description: str) -> str:
    if isinstance(leaf, Parameter):
        return f'  {identifier} [label="Parameter\\n{description}", style=bold, color=darkgreen];'
    if leaf.requires_grad:
        return f'  {identifier} [label="leaf\\n{description}", color=blue];'
    return f'  {identifier} [label="constant\\n{description}", color=gray];'


def render(tensor, path: str) -> str:
    """Write the graph as SVG or PNG (by the path's suffix) with Graphviz's `dot`."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "render: the Graphviz `dot` program is not installed (apt-get install graphviz); "
            "to_dot() gives the text without it"
        )
    fmt = path.rsplit(".", 1)[-1].lower()
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"render: path must end in .svg, .png or .pdf, got {path!r}")
    subprocess.run([dot, f"-T{fmt}", "-o", path], input=to_dot(tensor), text=True, check=True)
    return path
