"""Grad mode: no_grad, enable_grad and set_grad_enabled as context managers and
decorators build no graph where they should, and grad mode comes back after an
exception; grad mode and anomaly mode belong to a thread, as in PyTorch, and
set_grad_enabled works as a plain call, a context manager and a decorator."""
import threading

import pytest
from helpers import vector

import minigrad as mg
from minigrad.autograd import detect_anomaly, is_anomaly_enabled


def _in_thread(function):
    result = {}
    thread = threading.Thread(target=lambda: result.update(value=function()))
    thread.start()
    thread.join()
    return result["value"]


def test_no_grad_in_one_thread_does_not_stop_another_from_recording():
    x = mg.ones(3, requires_grad=True)
    inside, outside = threading.Event(), threading.Event()
    recorded = {}

    def quiet():
        with mg.no_grad():
            inside.set()
            outside.wait(5)
            recorded["quiet"] = (x * 2).requires_grad

    thread = threading.Thread(target=quiet)
    thread.start()
    inside.wait(5)
    recorded["main"] = (x * 2).requires_grad  # while the other thread is inside no_grad
    outside.set()
    thread.join()
    assert recorded == {"quiet": False, "main": True}


def test_many_threads_entering_and_leaving_no_grad_leave_grad_mode_on():
    def churn():
        for _ in range(2000):
            with mg.no_grad():
                assert not mg.is_grad_enabled()
            assert mg.is_grad_enabled()

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mg.is_grad_enabled()
    assert (mg.ones(2, requires_grad=True) * 2).requires_grad


def test_a_new_thread_starts_with_grad_mode_on_and_anomaly_off():
    with mg.no_grad(), detect_anomaly():
        assert _in_thread(lambda: (mg.is_grad_enabled(), is_anomaly_enabled())) == (True, False)


def test_set_grad_enabled_as_a_call_takes_effect_at_once():
    try:
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled()
        assert not (mg.ones(2, requires_grad=True) * 2).requires_grad
    finally:
        mg.set_grad_enabled(True)
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_context_manager_restores_the_previous_mode():
    with mg.set_grad_enabled(False):
        assert not mg.is_grad_enabled()
        with mg.set_grad_enabled(True):
            assert mg.is_grad_enabled()
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_decorator_changes_nothing_until_called():
    @mg.set_grad_enabled(False)
    def no_graph():
        return mg.is_grad_enabled()

    assert mg.is_grad_enabled()
    assert no_graph() is False
    assert mg.is_grad_enabled()


def test_no_grad_decorator_is_safe_under_recursion_and_threads():
    @mg.no_grad()
    def depth(n):
        assert not mg.is_grad_enabled()
        return 0 if n == 0 else 1 + depth(n - 1)

    assert depth(5) == 5 and mg.is_grad_enabled()
    assert _in_thread(lambda: depth(3)) == 3


def test_inference_mode_records_nothing_and_false_changes_nothing():
    x = mg.ones(2, requires_grad=True)
    with mg.inference_mode():
        assert not (x * 2).requires_grad
    with mg.inference_mode(False):
        assert (x * 2).requires_grad
    assert mg.is_grad_enabled()


def _assert_no_graph(t):
    assert t.grad_fn is None
    assert not t.requires_grad


@pytest.mark.device
def test_no_grad_context_and_decorator_build_no_graph():
    x = vector([1.0, 2.0])
    with mg.no_grad():
        _assert_no_graph(x * 2 + x.exp())
        assert not mg.is_grad_enabled()
    assert mg.is_grad_enabled()

    @mg.no_grad()
    def double(t):
        return t * 2

    _assert_no_graph(double(x))
    assert (x * 2).grad_fn is not None


@pytest.mark.device
def test_enable_grad_inside_no_grad_and_as_decorator():
    x = vector([1.0])

    @mg.enable_grad()
    def square(t):
        return t * t

    with mg.no_grad():
        with mg.enable_grad():
            assert (x * x).grad_fn is not None
        _assert_no_graph(x * x)
        assert square(x).grad_fn is not None


@pytest.mark.device
def test_set_grad_enabled_context_and_decorator():
    x = vector([1.0])
    with mg.set_grad_enabled(False):
        _assert_no_graph(x * x)
        with mg.set_grad_enabled(True):
            assert (x * x).requires_grad
    assert mg.is_grad_enabled()

    @mg.set_grad_enabled(False)
    def square(t):
        return t * t

    _assert_no_graph(square(x))
    assert mg.is_grad_enabled()


@pytest.mark.device
def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with mg.no_grad():
            raise ValueError("boom")
    assert mg.is_grad_enabled()


@pytest.mark.device
def test_no_graph_when_no_input_requires_grad():
    x = vector([1.0, 2.0], requires_grad=False)
    _assert_no_graph(x.exp() * x)
