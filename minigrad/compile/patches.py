"""Where a capture listens: wrappers installed around minigrad's and NumPy's entry points
for the duration of one capture, and removed after it (the core has no tracing code in
it; this is how minigrad/profiler.py times ops too).

- every Function subclass's `forward`: an op's forward is one recorded step (a Unit),
  run on plain arrays; `save_for_backward` and `Function.apply` see what it saves and
  which tensors it is applied to (a tensor seen for the first time becomes an external
  slot);
- NumPy's array creation and conversion functions (`np.zeros`, `np.asarray`, ...), which
  no array hook sees, and minigrad's random draws (mg.random, mg.Generator); while Numba
  compiles a kernel, NumPy's own functions are put back: Numba registers them by object
  when its CPU target first loads, and types a kernel's `np.empty` by the object found;
- when the GPU is usable, every public function and ufunc of the cupy module (of the
  stand-in under MINIGRAD_FAKE_GPU=1): ops call `xp.<fn>` with xp the module of their
  arrays, and CuPy has no hook for that (traced_device.py);
- `Tensor.item()`, `.numpy()`, `bool(t)`, printing, and collectives between processes:
  the capture stops there;
- `Tensor.grad` and `Tensor.array`, properties while capturing: reading and setting
  gradients is recorded, and a tensor whose array is read is bound;
- `Module.__call__`: a module's parameters and buffers are bound when it is called; a
  module with forward hooks stops the capture (a hook is Python, run only while the step
  is captured, so a replay would skip it);
- the engine's run_backward: whether the step runs a backward itself;
- Optimizer.step, LRScheduler.step, clip_grad_norm_ and Module.train (and so eval):
  replayed as Python (Opaque); a module's state before train() is what its guards hold.

The wrappers act only in the capturing thread, and only outside a recorded step.
"""
from __future__ import annotations

import functools

import numpy as np

from minigrad import distributed, random
from minigrad.autograd import engine
from minigrad.autograd.function import Function
from minigrad.backend.device import cupy_or_none
from minigrad.compile.recorder import Recorder
from minigrad.compile.traced import ACTIVE
from minigrad.compile.traced_device import device_functions, is_plain_array
from minigrad.compile.values import MISSING
from minigrad.distributed import collectives
from minigrad.generator import Generator
from minigrad.nn import utils as nn_utils
from minigrad.nn.modules.module import Module
from minigrad.nn.utils import clip_grad
from minigrad.optim.lr_scheduler_base import LRScheduler
from minigrad.optim.optimizer import Optimizer
from minigrad.tensor import Tensor
from minigrad.tensor_base import TensorBase

NUMPY_CREATION = ("zeros", "ones", "empty", "full", "arange", "eye", "identity", "linspace",
                  "tri", "array", "asarray", "asanyarray", "ascontiguousarray",
                  "asfortranarray")
RANDOM_DRAWS = ("uniform", "bernoulli", "normal", "integers")
GENERATOR_DRAWS = ("uniform", "normal", "integers")
TENSOR_VALUE_READS = ("item", "numpy", "tolist", "__bool__", "__float__", "__int__",
                      "__index__", "__repr__", "__format__")
COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "barrier", "all_gather_object",
               "broadcast_object_list")


def _recording() -> Recorder | None:
    recorder = ACTIVE.recorder
    return None if recorder is None or recorder.depth else recorder


class Patches:
    """Install every wrapper with `install()`; `remove()` puts the originals back."""

    def __init__(self):
        self._originals: list = []  # (owner, name, original)

    def _set(self, owner, name: str, replacement) -> None:
        self._originals.append((owner, name, owner.__dict__.get(name, MISSING)))
        setattr(owner, name, replacement)

    def remove(self) -> None:
        for owner, name, original in reversed(self._originals):
            if original is MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._originals.clear()

    def install(self) -> None:
        for cls in _subclasses(Function):
            if "forward" in cls.__dict__:
                self._set(cls, "forward", _unit_forward(cls.__dict__["forward"]))
        self._set(Function, "save_for_backward",
                  _saving(Function.__dict__["save_for_backward"]))
        self._set(Function, "apply", classmethod(_binding_apply(Function.apply.__func__)))
        numpy_originals = {name: getattr(np, name) for name in NUMPY_CREATION}
        for name, create in numpy_originals.items():
            self._set(np, name, _recorded_creation(create))
        from numba.core.dispatcher import Dispatcher  # numba's import: once, ~0.2 s
        self._set(Dispatcher, "compile",
                  _compiling_with_numpy(Dispatcher.__dict__["compile"], numpy_originals))
        cupy = cupy_or_none()
        if cupy is not None:  # ops call cupy.<fn>, which no array hook sees
            for name, recorded in _device_functions(cupy).items():
                self._set(cupy, name, recorded)
        for name in RANDOM_DRAWS:
            self._set(random, name, _recorded_draw(getattr(random, name)))
        for name in GENERATOR_DRAWS:
            self._set(Generator, name, _recorded_generator_draw(Generator.__dict__[name]))
        self._set(Tensor, "_wrap", staticmethod(_tracking_wrap(Tensor._wrap)))
        self._set(Tensor, "__init__", _tracking_init(Tensor.__init__))
        for name in TENSOR_VALUE_READS:
            self._set(Tensor, name, _refusing(getattr(Tensor, name), f"Tensor.{name}"))
        self._set(TensorBase, "grad", property(_read_grad, _write_grad))
        self._set(TensorBase, "array", _binding_array(TensorBase.__dict__["array"]))
        self._set(Module, "__call__", _binding_call(Module.__call__))
        self._set(Module, "train", _opaque_train(Module.__dict__["train"]))
        for cls in (Optimizer, *_subclasses(Optimizer)):
            if "step" in cls.__dict__:
                self._set(cls, "step", _opaque_optimizer_step(cls.__dict__["step"]))
        for cls in (LRScheduler, *_subclasses(LRScheduler)):
            if "step" in cls.__dict__:
                self._set(cls, "step", _opaque_method(cls.__dict__["step"]))
        for name in COLLECTIVES:
            refusing = _refusing_call(getattr(collectives, name), f"distributed.{name}")
            self._set(collectives, name, refusing)
            self._set(distributed, name, refusing)
        self._set(engine, "run_backward", _counted_backward(engine.run_backward))
        clip = _opaque_clip(clip_grad.clip_grad_norm_)
        self._set(clip_grad, "clip_grad_norm_", clip)
        self._set(nn_utils, "clip_grad_norm_", clip)


@functools.lru_cache(maxsize=4)
def _device_functions(cupy) -> dict:
    return device_functions(cupy)


def _subclasses(cls: type) -> list[type]:
    found, stack = [], list(cls.__subclasses__())
    while stack:
        sub = stack.pop()
        found.append(sub)
        stack.extend(sub.__subclasses__())
    return found


def _unit_forward(forward):
    @functools.wraps(forward)
    def traced_forward(self, *arrays, **params):
        recorder = _recording()
        if recorder is None:
            return forward(self, *arrays, **params)
        return recorder.unit(forward, self, arrays, params)

    return traced_forward


def _saving(save_for_backward):
    @functools.wraps(save_for_backward)
    def save(self, *arrays):
        recorder = ACTIVE.recorder
        if recorder is not None and recorder.unit_saved is not None:
            arrays = recorder.saved_in_unit(arrays)
        return save_for_backward(self, *arrays)

    return save


def _binding_apply(apply):
    @functools.wraps(apply)
    def binding_apply(cls, *inputs, **params):
        recorder = _recording()
        if recorder is not None:
            recorder.bind_inputs(inputs)
        return apply(cls, *inputs, **params)

    return binding_apply


def _recorded_creation(create):
    @functools.wraps(create)
    def recorded(*args, **kwargs):
        recorder = _recording()
        if recorder is None:
            return create(*args, **kwargs)
        return recorder.call(create, args, kwargs)

    return recorded


def _compiling_with_numpy(compile_kernel, numpy_originals: dict):
    """Numba's Dispatcher.compile with NumPy's own creation functions in place. A wrapper
    seen there would be registered in place of the function (if Numba's CPU target loads
    then), or fail to type, and Numba keeps a signature's failure for the process."""

    @functools.wraps(compile_kernel)
    def compile_with_numpy(self, signature):
        installed = {name: getattr(np, name) for name in numpy_originals}
        for name, original in numpy_originals.items():
            setattr(np, name, original)
        try:
            return compile_kernel(self, signature)
        finally:
            for name, wrapper in installed.items():
                setattr(np, name, wrapper)

    return compile_with_numpy


def _recorded_draw(draw):
    @functools.wraps(draw)
    def recorded(*args, **kwargs):
        recorder = _recording()
        if recorder is None:
            return draw(*args, **kwargs)
        return recorder.call(draw, args, kwargs, effect="random")

    return recorded


def _recorded_generator_draw(draw):
    @functools.wraps(draw)
    def recorded(self, *args, **kwargs):
        recorder = _recording()
        if recorder is None:
            return draw(self, *args, **kwargs)
        recorder.depth += 1  # its state (NumPy's bit generator makes arrays) is not a step
        try:
            recorder.rollback.generator(self)
        finally:
            recorder.depth -= 1
        return recorder.call(draw, (self, *args), kwargs, effect="random")

    return recorded


def _tracking_wrap(wrap):
    def tracking_wrap(data, grad_fn=None, version=None):
        t = wrap(data, grad_fn, version)
        recorder = ACTIVE.recorder
        if recorder is not None:
            recorder.created[id(t)] = t
        return t

    return tracking_wrap


def _tracking_init(init):
    @functools.wraps(init)
    def tracking_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        recorder = ACTIVE.recorder
        if recorder is not None:
            recorder.created[id(self)] = self

    return tracking_init


def _refusing(method, name: str):
    @functools.wraps(method)
    def refusing(self, *args, **kwargs):
        recorder = _recording()
        if recorder is not None:
            recorder.refuse(f"{name}() reads a tensor's value into Python")
        return method(self, *args, **kwargs)

    return refusing


def _refusing_call(function, name: str):
    @functools.wraps(function)
    def refusing(*args, **kwargs):
        recorder = _recording()
        if recorder is not None:
            recorder.refuse(f"{name}() (communication between processes is not captured)")
        return function(*args, **kwargs)

    return refusing


def _read_grad(tensor):
    recorder = _recording()
    if recorder is None:
        return tensor.__dict__.get("grad")
    return recorder.grad_read(tensor)


def _write_grad(tensor, value) -> None:
    recorder = _recording()
    if recorder is not None:
        recorder.grad_write(tensor, value)
    tensor.__dict__["grad"] = value


def _binding_array(slot):
    """`tensor.array` that binds a tensor the capture reads for the first time (a
    parameter of a closure, say): from then on its array is traced."""

    def read(tensor):
        array = slot.__get__(tensor)
        recorder = _recording()
        if recorder is not None and is_plain_array(array):
            return recorder.first_read(tensor, array)
        return array

    return property(read, slot.__set__)


def _binding_call(call):
    @functools.wraps(call)
    def binding_call(self, *args, **kwargs):
        recorder = _recording()
        if recorder is not None:
            if self._forward_hooks or self._forward_pre_hooks:
                recorder.refuse(f"a forward hook of {type(self).__name__} (its Python runs "
                                "only while the step is captured)")
            recorder.bind_module(self)
        return call(self, *args, **kwargs)

    return binding_call


def _counted_backward(run_backward):
    @functools.wraps(run_backward)
    def counted(*args, **kwargs):
        recorder = _recording()
        if recorder is not None:
            recorder.backward_called()
        return run_backward(*args, **kwargs)

    return counted


def _opaque_optimizer_step(step):
    @functools.wraps(step)
    def opaque_step(self, closure=None):
        recorder = _recording()
        if recorder is None:
            return step(self, closure)
        if closure is not None:
            recorder.refuse(f"{type(self).__name__}.step(closure)")
        params = [p for group in self.param_groups for p in group["params"]]
        return recorder.opaque(step, (self,), {}, params)

    return opaque_step


def _opaque_method(method):
    @functools.wraps(method)
    def opaque(self, *args, **kwargs):
        recorder = _recording()
        if recorder is None:
            return method(self, *args, **kwargs)
        return recorder.opaque(method, (self, *args), kwargs, [])

    return opaque


def _opaque_train(train):
    @functools.wraps(train)
    def opaque_train(self, mode=True):
        recorder = _recording()
        if recorder is None:
            return train(self, mode)
        for module in self.modules():  # each one's flag before the step: the guards' value
            recorder.rollback.module(module, replayed="training")
        return recorder.opaque(train, (self, mode), {}, [])

    return opaque_train


def _opaque_clip(clip):
    @functools.wraps(clip)
    def opaque_clip(parameters, *args, **kwargs):
        recorder = _recording()
        if recorder is None:
            return clip(parameters, *args, **kwargs)
        parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
        return recorder.opaque(clip, (parameters, *args), kwargs, parameters)

    return opaque_clip
