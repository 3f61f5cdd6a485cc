"""minigrad.utils.data against torch.utils.data: the same batches, lengths, shards and
errors wherever the behaviour does not depend on the random stream; where it does
(shuffling), the properties PyTorch guarantees: permutations, reproducible seeds, new
orders per epoch, disjoint shards."""
import collections
import itertools

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    default_convert,
    random_split,
)

Point = collections.namedtuple("Point", ["x", "y"])


def torch_data():
    torch = pytest.importorskip("torch")
    return torch, torch.utils.data


def as_plain(value):
    """Tensors (minigrad or torch) as (dtype name, nested lists); containers kept."""
    if isinstance(value, mg.Tensor):
        return (value.dtype.name, value.tolist())
    if type(value).__module__.startswith("torch"):
        return (str(value.dtype).removeprefix("torch."), value.tolist())
    if isinstance(value, dict):
        return {key: as_plain(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(as_plain(item) for item in value))
    if isinstance(value, (list, tuple)):
        return type(value)(as_plain(item) for item in value)
    return value


# ----------------------------------------------------------------------------- collate

COLLATE_CASES = {
    "tensors": lambda t: [t.arange(6).reshape(2, 3) * i for i in range(3)],
    "floats": lambda t: [0.5, 1.5, -2.0],
    "ints": lambda t: [1, 2, 3],
    "bools": lambda t: [True, False],
    "strings": lambda t: ["a", "bc"],
    "numpy arrays": lambda t: [np.ones((2, 2)) * i for i in range(3)],
    "numpy scalars": lambda t: [np.float64(1.5), np.float64(2.5)],
    "tuples": lambda t: [(1, 2.0, "x"), (3, 4.0, "y")],
    "lists": lambda t: [[1, 2], [3, 4]],
    "dicts": lambda t: [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}],
    "namedtuples": lambda t: [Point(1, 2.0), Point(3, 4.0)],
    "nested": lambda t: [({"ids": np.arange(3)}, 0.5), ({"ids": np.arange(3) + 1}, 1.5)],
}


@pytest.mark.parametrize("case", list(COLLATE_CASES))
def test_default_collate_matches_torch(case):
    torch, data = torch_data()
    ours = default_collate(COLLATE_CASES[case](mg))
    theirs = data.default_collate(COLLATE_CASES[case](torch))
    assert as_plain(ours) == as_plain(theirs)
    if not isinstance(ours, mg.Tensor):
        assert type(ours) is type(theirs)


def test_default_collate_refuses_what_torch_refuses():
    _, data = torch_data()
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(RuntimeError, match="equal size"):
        data.default_collate([[1, 2], [3]])
    for bad in ([object(), object()], [np.array(["a", "b"]), np.array(["c", "d"])]):
        with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
            default_collate(bad)
        with pytest.raises(TypeError):
            data.default_collate(bad)


def test_default_convert_matches_torch():
    torch, data = torch_data()
    sample = {"x": np.arange(3.0), "n": np.int64(2), "tag": "a", "pair": (np.ones(2), 1)}
    assert as_plain(default_convert(sample)) == as_plain(data.default_convert(sample))


# ----------------------------------------------------------------------------- datasets


def test_tensor_dataset_indexes_every_tensor_and_checks_sizes():
    x, y = mg.arange(12).reshape(4, 3), mg.arange(4) * 10
    dataset = TensorDataset(x, y)
    assert len(dataset) == 4
    row, label = dataset[2]
    assert row.tolist() == [6, 7, 8] and label.item() == 20
    with pytest.raises(ValueError, match=r"first dimensions are \[4, 3\]"):
        TensorDataset(x, mg.arange(3))
    with pytest.raises(TypeError, match="argument 1 must be a tensor"):
        TensorDataset(x, [1, 2, 3, 4])


def test_subset_concat_and_add_match_torch():
    torch, data = torch_data()
    ours = ConcatDataset([list(range(3)), list(range(10, 15))]) + Subset(list("abcdef"), [5, 0])
    theirs = data.ConcatDataset([list(range(3)), list(range(10, 15))]) + data.Subset(
        list("abcdef"), [5, 0])
    assert len(ours) == len(theirs) == 10
    assert [ours[i] for i in range(-10, 10)] == [theirs[i] for i in range(-10, 10)]
    for index in (10, -11):
        with pytest.raises(IndexError):
            ours[index]
    rows, = Subset(TensorDataset(mg.arange(6) * 10), [5, 0, 2])[[0, 2]]
    assert rows.tolist() == [50, 20]


@pytest.mark.parametrize("size, lengths", [
    (10, [3, 7]), (10, [0.3, 0.3, 0.4]), (5, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]),
    (3, [1.0]), (11, [0.25, 0.25, 0.25, 0.25]),
])
def test_random_split_sizes_match_torch_and_splits_partition(size, lengths):
    torch, data = torch_data()
    ours = random_split(range(size), lengths, generator=0)
    theirs = data.random_split(range(size), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(split) for split in ours] == [len(split) for split in theirs]
    members = sorted(item for split in ours for item in split)
    assert members == list(range(size))
    again = random_split(range(size), lengths, generator=0)
    assert [list(split) for split in again] == [list(split) for split in ours]


def test_random_split_follows_the_global_seed_and_checks_lengths():
    mg.manual_seed(3)
    first = [list(s) for s in random_split(range(20), [10, 10])]
    mg.manual_seed(3)
    assert [list(s) for s in random_split(range(20), [10, 10])] == first
    assert [list(s) for s in random_split(range(20), [10, 10])] != first
    with pytest.raises(ValueError, match="sum to 9, but the dataset has 10 samples"):
        random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="fraction at index 0 is 1.5"):
        random_split(range(10), [1.5, -0.5])
    with pytest.raises(TypeError, match="generator must be a minigrad.Generator, a numpy"):
        random_split(range(10), [5, 5], generator="seed")


# ----------------------------------------------------------------------------- samplers


def test_sequential_and_batch_samplers_match_torch():
    _, data = torch_data()
    for size, batch_size, drop_last in itertools.product((0, 1, 7, 8), (1, 3, 8), (False, True)):
        ours = BatchSampler(SequentialSampler(range(size)), batch_size, drop_last)
        theirs = data.BatchSampler(data.SequentialSampler(range(size)), batch_size, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)


@pytest.mark.parametrize("num_samples", [None, 3, 10, 25])
def test_random_sampler_permutes_each_pass_like_torch(num_samples):
    _, data = torch_data()
    sampler = RandomSampler(range(10), num_samples=num_samples, generator=5)
    torch_sampler = data.RandomSampler(range(10), num_samples=num_samples)
    first, second = list(sampler), list(sampler)
    assert len(first) == len(sampler) == len(list(torch_sampler)) == len(torch_sampler)
    for start in range(0, len(first), 10):  # each block of 10 is part of a permutation
        block = first[start:start + 10]
        assert len(set(block)) == len(block) and set(block) <= set(range(10))
    assert first != second  # the generator moves on between epochs
    assert list(RandomSampler(range(10), num_samples=num_samples, generator=5)) == first
    rng = np.random.default_rng(5)
    assert list(RandomSampler(range(10), num_samples=num_samples, generator=rng)) == first


def test_random_sampler_with_replacement_and_errors_match_torch():
    _, data = torch_data()
    draws = list(RandomSampler(range(4), replacement=True, num_samples=200, generator=1))
    assert len(draws) == 200 and set(draws) == {0, 1, 2, 3}
    for kwargs, error in (({"num_samples": 0}, ValueError), ({"num_samples": -2}, ValueError),
                          ({"replacement": 1}, TypeError)):
        with pytest.raises(error):
            data.RandomSampler(range(4), **kwargs)
        with pytest.raises(error, match="RandomSampler: "):
            RandomSampler(range(4), **kwargs)


def test_random_sampler_refuses_sizes_that_are_not_positive_ints():
    for bad in (0, -1, 2.5, 3.0, True, "3"):
        with pytest.raises(ValueError, match="RandomSampler: num_samples should be a positive "
                                             f"integer value, but got num_samples={bad!r}"):
            RandomSampler(range(4), num_samples=bad)


def test_random_sampler_without_generator_follows_manual_seed():
    mg.manual_seed(11)
    first = list(RandomSampler(range(50)))
    mg.manual_seed(11)
    assert list(RandomSampler(range(50))) == first
    assert sorted(first) == list(range(50))
    subset = list(SubsetRandomSampler([10, 20, 30], generator=0))
    assert sorted(subset) == [10, 20, 30]


@pytest.mark.parametrize("size", [0, 1, 5, 10, 11, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shards_match_torch(size, replicas, drop_last):
    _, data = torch_data()
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, shuffle=False,
                                  drop_last=drop_last)
        theirs = data.DistributedSampler(range(size), replicas, rank, shuffle=False,
                                         drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        shuffled = DistributedSampler(range(size), replicas, rank, drop_last=drop_last)
        assert len(list(shuffled)) == len(data.DistributedSampler(
            range(size), replicas, rank, drop_last=drop_last))


def test_distributed_sampler_shuffles_the_same_way_on_every_rank_per_epoch():
    def shards(epoch: int, seed: int = 0) -> list[list[int]]:
        samplers = [DistributedSampler(range(10), 3, rank, seed=seed) for rank in range(3)]
        for sampler in samplers:
            sampler.set_epoch(epoch)
        return [list(sampler) for sampler in samplers]

    epoch_0 = shards(0)
    assert all(len(shard) == 4 for shard in epoch_0)
    # interleaved back, the shards are a permutation of 0..9 padded with its first two
    order = [epoch_0[i % 3][i // 3] for i in range(12)]
    assert sorted(order[:10]) == list(range(10)) and order[10:] == order[:2]
    assert shards(0) == epoch_0
    assert shards(1) != epoch_0
    assert shards(0, seed=1) != epoch_0


def test_distributed_sampler_checks_its_arguments():
    with pytest.raises(ValueError, match=r"invalid rank 2, rank should be in the interval"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="num_replicas should be a positive integer value, "
                                             f"but got num_replicas={bad!r}"):
            DistributedSampler(range(4), num_replicas=bad, rank=0)
    for bad in (-1, 1.0, True):
        with pytest.raises(ValueError, match=rf"invalid rank {bad!r}, rank should be in the "
                                             r"interval \[0, 2\]"):
            DistributedSampler(range(4), num_replicas=3, rank=bad)
    with pytest.raises(RuntimeError, match="not been initialized"):
        DistributedSampler(range(4))


# ----------------------------------------------------------------------------- DataLoader


def loader_pair(torch, data, size=10, **kwargs):
    x = np.arange(size * 2, dtype=np.float32).reshape(size, 2)
    y = np.arange(size)
    ours = DataLoader(TensorDataset(mg.tensor(x), mg.tensor(y)), **kwargs)
    theirs = data.DataLoader(data.TensorDataset(torch.tensor(x), torch.tensor(y)), **kwargs)
    return ours, theirs


@pytest.mark.parametrize("batch_size", [1, 3, 4, 10, 32, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_dataloader_batches_match_torch(batch_size, drop_last):
    torch, data = torch_data()
    if batch_size is None and drop_last:
        return
    ours, theirs = loader_pair(torch, data, batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [as_plain(b) for b in ours] == [as_plain(b) for b in theirs]


def test_dataloader_shuffles_per_epoch_reproducibly():
    torch, data = torch_data()
    ours, theirs = loader_pair(torch, data, size=20, batch_size=6, shuffle=True)
    assert len(ours) == len(theirs) == 4
    seen = [int(v) for _, y in ours for v in y.tolist()]
    assert sorted(seen) == list(range(20))
    loader = DataLoader(range(20), batch_size=5, shuffle=True, generator=42)
    epoch_1 = [b.tolist() for b in loader]
    epoch_2 = [b.tolist() for b in loader]
    assert epoch_1 != epoch_2
    assert [b.tolist() for b in DataLoader(range(20), batch_size=5, shuffle=True,
                                           generator=42)] == epoch_1


def test_dataloader_with_samplers_dicts_and_collate_fn():
    class Records(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, index):
            return {"id": index, "feature": np.full(2, index, dtype=np.float32)}

    loader = DataLoader(Records(), batch_size=2,
                        sampler=DistributedSampler(Records(), 2, 1, shuffle=False))
    batches = list(loader)
    assert [b["id"].tolist() for b in batches] == [[1, 3], [0]]
    assert batches[0]["feature"].dtype is mg.float32
    joined = DataLoader(Records(), batch_size=3, collate_fn=lambda samples: [s["id"]
                                                                             for s in samples])
    assert list(joined) == [[0, 1, 2], [3, 4]]
    pairs = DataLoader(Records(), batch_sampler=[[4, 0], [2]])
    assert [b["id"].tolist() for b in pairs] == [[4, 0], [2]]


def test_dataloader_batches_an_iterable_dataset_like_torch():
    torch, data = torch_data()

    def stream(base):
        class Stream(base):
            def __iter__(self):
                return iter(range(7))

            def __len__(self):
                return 7
        return Stream()

    for drop_last in (False, True):
        ours = DataLoader(stream(IterableDataset), batch_size=3, drop_last=drop_last)
        theirs = data.DataLoader(stream(data.IterableDataset), batch_size=3,
                                 drop_last=drop_last)
        assert [as_plain(b) for b in ours] == [as_plain(b) for b in theirs]
        assert len(ours) == len(theirs)


class _Stream:
    """A seven-sample stream with a length, for minigrad's or torch's IterableDataset."""

    def __iter__(self):
        return iter(range(7))

    def __len__(self):
        return 7


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "2"])
def test_every_dataloader_refuses_a_batch_size_that_is_not_a_positive_int(bad):
    """Map-style or stream, a batch size of 0 or -1 would make one batch of everything
    (and len() divide by zero): PyTorch's ValueError instead."""
    torch, data = torch_data()
    streams = (type("Stream", (_Stream, IterableDataset), {})(),
               type("Stream", (_Stream, data.IterableDataset), {})())
    for ours, theirs in ((list(range(7)), list(range(7))), streams):
        with pytest.raises(ValueError, match="DataLoader: batch_size should be a positive "
                                             f"integer value, but got batch_size={bad!r}"):
            DataLoader(ours, batch_size=bad)
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            data.DataLoader(theirs, batch_size=bad)
        with pytest.raises(ValueError, match="DataLoader: drop_last should be a boolean"):
            DataLoader(ours, batch_size=2, drop_last=1)
        with pytest.raises(ValueError, match="drop_last should be a boolean"):
            data.DataLoader(theirs, batch_size=2, drop_last=1)


def test_dataloader_rejects_what_torch_rejects():
    torch, data = torch_data()
    dataset = list(range(5))
    cases = [
        ({"sampler": SequentialSampler(dataset), "shuffle": True}, "mutually exclusive"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually"),
        ({"batch_sampler": [[0]], "drop_last": True}, "batch_sampler option is mutually"),
        ({"batch_size": None, "drop_last": True}, "disables auto-batching"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(dataset, **kwargs)
        torch_kwargs = {**kwargs}
        if "sampler" in kwargs:
            torch_kwargs["sampler"] = data.SequentialSampler(dataset)
        with pytest.raises(ValueError):
            data.DataLoader(dataset, **torch_kwargs)
    with pytest.raises(ValueError, match="IterableDataset: expected unspecified shuffle"):
        DataLoader(IterableDataset(), shuffle=True)
