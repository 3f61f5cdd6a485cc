"""Graphviz DOT text of the graph behind a tensor, for people studying the engine.

    print(mg.viz.to_dot(loss))          # paste into any Graphviz viewer
    mg.viz.render(loss, "graph.svg")    # needs the `dot` program installed
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np

from minigrad.autograd.accumulate_grad import AccumulateGrad
from minigrad.nn.parameter import Parameter


def to_dot(tensor, name: str = "output") -> str:
    """DOT text of the backward graph behind `tensor`, as the engine walks it: one box per
    node (its name and the shape and dtype of the tensor it made), one ellipse per leaf
    at an AccumulateGrad node (parameters drawn bold, other leaves in blue), and an edge
    from each node to the nodes in its next_functions. Tensors that need no gradient are
    not in the graph, so they are not drawn."""
    lines = ["digraph minigrad {", "  rankdir=TB;", '  node [fontname="monospace"];']
    ids: dict[int, str] = {}

    def node_id(obj) -> str:
        return ids.setdefault(id(obj), f"n{len(ids)}")

    lines.append(f'  {node_id(tensor)} [label="{name}\\n{_describe(tensor)}", shape=note];')
    root = tensor.grad_fn
    if root is None:
        return "\n".join(lines + ["}"])
    lines.append(f"  {node_id(tensor)} -> {node_id(root)};")
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        lines.append(_node_line(node_id(node), node))
        for next_node, _ in node.next_functions:
            if next_node is not None:
                lines.append(f"  {node_id(node)} -> {node_id(next_node)};")
                stack.append(next_node)
    return "\n".join(lines) + "\n}"


def _describe(t) -> str:
    return f"{tuple(t.shape)} {t.dtype.name}"


def _node_line(identifier: str, node) -> str:
    if isinstance(node, AccumulateGrad):
        leaf = node.variable
        kind, style = ("Parameter", "style=bold, color=darkgreen") if isinstance(
            leaf, Parameter) else ("leaf", "color=blue")
        return (f'  {identifier} [label="{node.name}\\n{kind} {_describe(leaf)}", {style}];')
    made = f"{tuple(node.grad_shape)} {np.dtype(node.grad_dtype).name}"
    return f'  {identifier} [label="{node.name}\\n{made}", shape=box];'


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
