"""What minigrad refuses by design, since loading a pickle can run arbitrary code: pickling
a Module, saving objects that are not tensors and plain data, PyTorch's allowlists of
classes to unpickle. Each refusal says why and what to do instead, and what it points to
works."""
import copy
import pickle
import zipfile

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _model() -> nn.Module:
    mg.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LayerNorm(4))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickling_a_module_is_refused_with_the_state_dict_way(protocol):
    with pytest.raises(TypeError) as info:
        pickle.dumps({"model": _model()}, protocol=protocol)
    message = str(info.value)
    assert "cannot pickle a Sequential module" in message
    assert "arbitrary code" in message
    assert "mg.save(model.state_dict(), path)" in message
    assert "model.load_state_dict(mg.load(path))" in message


def test_modules_still_copy_deeply_and_shallowly():
    model = _model()
    deep = copy.deepcopy(model)
    for (name, theirs), (_, ours) in zip(deep.named_parameters(), model.named_parameters()):
        assert theirs is not ours and theirs.array is not ours.array, name
        np.testing.assert_array_equal(theirs.numpy(), ours.numpy())
    deep[0].weight.array[...] = 0.0
    assert np.abs(model[0].weight.numpy()).sum() > 0
    shallow = copy.copy(model)
    assert shallow is not model and shallow[0] is model[0]
    shared = nn.Linear(2, 2)
    twice = copy.deepcopy(nn.Sequential(shared, shared))
    assert twice[0] is twice[1] and twice[0] is not shared  # the memo keeps sharing


def test_saving_a_module_is_refused_with_the_state_dict_way(tmp_path):
    path = tmp_path / "model.mg"
    for obj, where in ((_model(), "<root>"), ({"run": {"model": _model()}}, "run.model"),
                       (mg.optim.SGD(_model().parameters(), lr=0.1), "<root>")):
        with pytest.raises(TypeError) as info:
            mg.save(obj, path)
        message = str(info.value)
        assert f"object at {where}:" in message and "arbitrary code" in message
        assert "mg.save(obj.state_dict(), path)" in message
        assert "obj.load_state_dict(mg.load(path))" in message
    assert not path.exists()


def test_saving_another_object_says_what_a_checkpoint_holds(tmp_path):
    with pytest.raises(TypeError) as info:
        mg.save({"steps": [1, {2, 3}]}, tmp_path / "x.mg")
    message = str(info.value)
    assert "cannot store a 'set' object at steps.1:" in message
    assert "arbitrary code" in message
    assert "tensors, arrays, dicts, lists, tuples, numbers, str and None" in message


def test_the_state_dict_way_restores_the_model(tmp_path):
    model, fresh = _model(), nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LayerNorm(4))
    mg.save(model.state_dict(), tmp_path / "model.mg")
    fresh.load_state_dict(mg.load(tmp_path / "model.mg", weights_only=True))
    for (name, ours), (_, theirs) in zip(model.state_dict().items(), fresh.state_dict().items()):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def test_load_refuses_weights_only_false(tmp_path):
    mg.save({"w": mg.ones(2)}, tmp_path / "w.mg")
    with pytest.raises(ValueError, match="weights_only=False asks to unpickle.*arbitrary code"):
        mg.load(tmp_path / "w.mg", weights_only=False)


@pytest.mark.parametrize("name", ["add_safe_globals", "safe_globals"])
def test_safe_globals_are_refused_with_the_reason(name):
    from minigrad import serialization

    with pytest.raises(RuntimeError) as info:
        getattr(serialization, name)([np.dtype])
    message = str(info.value)
    assert message.startswith(f"serialization.{name}: ")
    assert "never unpickles" in message and "arbitrary code" in message
    assert "state_dict()" in message


def test_a_torch_save_file_is_refused_with_how_to_convert_it(tmp_path):
    pickled, archive = tmp_path / "old.pt", tmp_path / "new.pt"
    pickled.write_bytes(pickle.dumps({"w": [1.0]}))
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("archive/data.pkl", pickle.dumps({"w": [1.0]}))
    for path, kind in ((pickled, "a pickle file"), (archive, "a zip archive")):
        with pytest.raises(ValueError) as info:
            mg.load(path)
        message = str(info.value)
        assert message.startswith(f"{path}: this is {kind}")
        assert "arbitrary code" in message and "safetensors.torch.save_file" in message
