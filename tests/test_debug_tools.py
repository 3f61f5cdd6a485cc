"""Tools for people studying the engine: viz.to_dot, detect_anomaly, the profiler and
MINIGRAD_DEBUG=1."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn.parameter import Parameter

REPO = Path(__file__).resolve().parent.parent


def test_to_dot_describes_ops_shapes_dtypes_and_leaves():
    w = Parameter(mg.ones(3, 2))
    x = mg.ones(4, 3, dtype=mg.float32)
    b = mg.zeros(2, requires_grad=True)
    loss = (x @ w + b).tanh().sum()
    dot = mg.viz.to_dot(loss)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    for op in ("MatMulBackward0", "AddBackward0", "TanhBackward0", "SumBackward0"):
        assert op in dot
    assert "(4, 2) float32" in dot  # an op's output shape and dtype
    assert "AccumulateGrad\\nParameter (3, 2) float32" in dot  # parameters are marked
    assert "AccumulateGrad\\nleaf (2,) float32" in dot  # other leaves that require grad
    assert "(4, 3)" not in dot  # x needs no gradient: it is not in the backward graph
    assert dot.count("->") == 6  # output -> Sum -> Tanh -> Add -> (MatMul -> w, b)


def test_to_dot_of_a_leaf_and_a_shared_subgraph():
    x = mg.ones(2, requires_grad=True)
    assert "(2,) float32" in mg.viz.to_dot(x)
    h = x.exp()
    dot = mg.viz.to_dot(h * h)
    assert dot.count('label="ExpBackward0') == 1  # a node used twice is drawn once


def test_render(tmp_path):
    loss = (mg.ones(2, requires_grad=True) * 2).sum()
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="Graphviz"):
            mg.viz.render(loss, str(tmp_path / "graph.svg"))
    else:
        path = mg.viz.render(loss, str(tmp_path / "graph.svg"))
        assert "<svg" in Path(path).read_text()
    with pytest.raises((ValueError, RuntimeError)):
        mg.viz.render(loss, str(tmp_path / "graph.txt"))


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_detect_anomaly_names_the_op_and_the_forward_line():
    x = mg.tensor([0.0, 1.0], dtype=mg.float64, requires_grad=True)
    with mg.autograd.detect_anomaly():
        y = x.sqrt()  # the derivative of sqrt at 0 is infinite
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert "Sqrt" in message and "nan or inf" in message
    assert "test_debug_tools.py" in message and "y = x.sqrt()" in message


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_without_detect_anomaly_inf_flows_silently():
    x = mg.tensor([0.0, 1.0], dtype=mg.float64, requires_grad=True)
    x.sqrt().sum().backward()
    assert np.isinf(x.grad.numpy()[0])


def test_detect_anomaly_as_decorator_restores_state():
    @mg.autograd.detect_anomaly()
    def run():
        x = mg.tensor([1.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
        return x.grad

    np.testing.assert_allclose(run().numpy(), [0.5, 0.25])
    assert not mg.autograd.is_anomaly_enabled()


def test_profiler_counts_ops_forward_and_backward():
    x = mg.ones(8, 4, requires_grad=True)
    w = mg.ones(4, 3, requires_grad=True)
    with mg.profiler.profile() as prof:
        for _ in range(3):
            loss = (x @ w).relu().sum()
            loss.backward()
    assert prof.forward_calls["MatMul"] == 3
    assert prof.forward_calls["Relu"] == 3
    assert prof.backward_calls["MatMul"] == 3
    assert prof.forward_seconds["MatMul"] > 0
    table = prof.table()
    header = table.splitlines()[0]
    for column in ("op", "fwd calls", "fwd ms", "bwd calls", "bwd ms"):
        assert column in header
    matmul_row = next(line for line in table.splitlines() if line.startswith("MatMul"))
    assert matmul_row.split()[1] == "3" and matmul_row.split()[3] == "3"
    assert table.splitlines()[-1].startswith("total")
    # outside the profile, the plain entry points are back
    assert mg.autograd.Function.apply.__func__ is mg.profiler._plain_apply
    assert mg.autograd.engine.call_backward is mg.profiler._plain_call_backward


def test_minigrad_debug_prints_a_table_at_exit():
    script = (
        "import minigrad as mg\n"
        "x = mg.ones(3, 2, requires_grad=True)\n"
        "(x.exp() * 2).sum().backward()\n"
        "print('done')\n"
    )
    env = dict(os.environ, MINIGRAD_DEBUG="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("done") < out.index("[minigrad profile]")
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["Exp"][1] == "1" and rows["Exp"][3] == "1"
    assert rows["Mul"][1] == "1" and "total" in rows


def test_no_table_without_minigrad_debug():
    env = {k: v for k, v in os.environ.items() if k != "MINIGRAD_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", "import minigrad as mg; (mg.ones(2) * 2).sum()"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # nothing printed on import or at exit
