"""A nested Python structure as JSON plus named arrays, and back.

Every JSON object in the structure is a tagged node, so no user key can be mistaken for
a tag: {"tensor": key} (plus "device": "gpu" for a GPU tensor), {"array": key},
{"dict": [[k, v], ...]} and {"tuple": [...]}; JSON lists, strings, numbers, booleans and
null stand for themselves. A tensor or array is stored under a key made from its path
("model.0.weight"), so a plain state dict keeps its names inside the safetensors file.

Decoding trusts nothing: each node's shape and types are checked, every stored array
must be referenced exactly once, and containers may nest at most MAX_NESTING deep, on
the way in as on the way out, so whatever save writes, load reads.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from minigrad.tensor import Tensor

MAX_NESTING = 100
# JSON levels per container: a dict node is {"dict": [[key, value]]}, 3 deep; plus the
# header object around the structure and a tensor node's object
MAX_JSON_DEPTH = 3 * MAX_NESTING + 2

_TAGS = ("tensor", "array", "dict", "tuple")


def encode(obj, arrays: dict[str, np.ndarray]):
    """The JSON structure of `obj`; its tensors and arrays go into `arrays` by key."""
    return _encode(obj, "", arrays, 0)


def _encode(obj, name: str, arrays: dict, depth: int):
    if isinstance(obj, Tensor):
        node = {"tensor": _store(obj.numpy(), name, arrays)}
        if obj.device.type != "cpu":
            node["device"] = "gpu"  # the file's name of the GPU
        return node
    if isinstance(obj, np.ndarray):
        return {"array": _store(obj, name, arrays)}
    if isinstance(obj, (dict, list, tuple)):
        if depth == MAX_NESTING:
            raise ValueError(f"save: containers nest deeper than {MAX_NESTING} levels at "
                             f"{_where(name)} (does a container hold itself?)")
        return _encode_container(obj, name, arrays, depth + 1)
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise _refusal(obj, name)


def _encode_container(obj, name: str, arrays: dict, depth: int):
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"save: dict keys must be str or int, got {key!r} at "
                                f"{_where(name)}")
            items.append([key, _encode(value, _join(name, key), arrays, depth)])
        return {"dict": items}
    values = [_encode(value, _join(name, i), arrays, depth) for i, value in enumerate(obj)]
    return values if isinstance(obj, list) else {"tuple": values}


def _refusal(obj, name: str) -> TypeError:
    """Why a checkpoint cannot hold `obj` (it would have to be pickled), and what to save."""
    if callable(getattr(obj, "state_dict", None)):  # a Module, an optimizer, a scheduler
        advice = ("save its state_dict() instead: mg.save(obj.state_dict(), path), and "
                  "restore it with obj.load_state_dict(mg.load(path))")
    else:
        advice = ("a checkpoint holds tensors, arrays, dicts, lists, tuples, numbers, str "
                  "and None; convert the object to those")
    return TypeError(f"save: cannot store a {type(obj).__name__!r} object at {_where(name)}: "
                     "checkpoints never hold pickled objects, since loading a pickle can run "
                     f"arbitrary code; {advice}")


def _where(name: str) -> str:
    """A path for an error message, shortened from the left."""
    if not name:
        return "<root>"
    return name if len(name) <= 80 else "..." + name[-77:]


def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _store(array: np.ndarray, name: str, arrays: dict) -> str:
    """Put `array` under a unique key derived from its path; return the key."""
    if not _is_unicode(name):
        name = "tensor"  # a lone surrogate: other safetensors readers reject such names
    key = name or "tensor"
    suffix = 1
    while key in arrays or key == "__metadata__":  # the format's own field
        suffix += 1
        key = f"{name}#{suffix}"
    # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
    arrays[key] = array if array.flags.c_contiguous else array.copy(order="C")
    return key


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode(node, arrays: dict[str, np.ndarray], make_tensor: Callable) -> object:
    """Rebuild the structure; `make_tensor(array, key, saved_device)` turns each tensor
    node's array into a tensor. Raises ValueError saying what is malformed and where."""
    unused = set(arrays)
    result = _Decoder(arrays, make_tensor, unused).decode(node, "<root>", 0)
    if unused:
        raise ValueError(f"stored tensors that the structure never uses: "
                         f"{sorted(unused)[:5]}")
    return result


class _Decoder:
    def __init__(self, arrays: dict, make_tensor: Callable, unused: set):
        self.arrays = arrays
        self.make_tensor = make_tensor
        self.unused = unused

    def decode(self, node, where: str, depth: int):
        if isinstance(node, list):
            return [self.decode(value, f"{where}[{i}]", self._deeper(depth, where))
                    for i, value in enumerate(node)]
        if isinstance(node, dict):
            return self._tagged(node, where, depth)
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        raise ValueError(f"at {where}: unexpected JSON value {node!r}")

    def _tagged(self, node: dict, where: str, depth: int):
        tag = next((name for name in _TAGS if name in node), None)
        allowed = {"tensor", "device"} if tag == "tensor" else {tag}
        if tag is None or set(node) - allowed:
            raise ValueError(f"at {where}: expected one of the nodes {_TAGS}, got the keys "
                             f"{sorted(node)[:4]}")
        value = node[tag]
        if tag == "tensor":
            device = node.get("device", "cpu")
            if device not in ("cpu", "gpu"):
                raise ValueError(f"at {where}: unknown device {device!r}")
            return self.make_tensor(self._take(value, where), value, device)
        if tag == "array":
            return self._take(value, where)
        if not isinstance(value, list):
            raise ValueError(f"at {where}: a {tag} node holds a list, got {type(value).__name__}")
        depth = self._deeper(depth, where)
        if tag == "tuple":
            return tuple(self.decode(item, f"{where}[{i}]", depth)
                         for i, item in enumerate(value))
        return self._dict(value, where, depth)

    def _dict(self, items: list, where: str, depth: int) -> dict:
        result = {}
        for item in items:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], (str, int))
                    and not isinstance(item[0], bool)):
                raise ValueError(f"at {where}: a dict entry must be [str or int key, value], "
                                 f"got {str(item)[:60]}")
            key = item[0]
            if key in result:
                raise ValueError(f"at {where}: key {key!r} appears twice")
            result[key] = self.decode(item[1], f"{where}[{key!r}]", depth)
        return result

    def _take(self, key, where: str) -> np.ndarray:
        if not isinstance(key, str) or key not in self.arrays:
            raise ValueError(f"at {where}: refers to a tensor {str(key)[:60]!r} the file "
                             "does not hold")
        if key not in self.unused:
            raise ValueError(f"at {where}: tensor {key!r} is referenced twice")
        self.unused.discard(key)
        return self.arrays[key]

    @staticmethod
    def _deeper(depth: int, where: str) -> int:
        if depth == MAX_NESTING:
            raise ValueError(f"at {where}: containers nest deeper than {MAX_NESTING} levels")
        return depth + 1
