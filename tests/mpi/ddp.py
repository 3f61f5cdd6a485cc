"""DistributedDataParallel against one process on the whole batch, on every rank.

Run by tests/test_distributed.py as `mpiexec -n 2 python tests/mpi/ddp.py`. Each rank
trains the DDP model on its shard of every batch and, beside it, a plain copy of the
model (the one-process run) on the whole batch; after backward and after 10 Adam steps
their gradients and parameters must agree to 1e-10 in float64. Also: no_sync gradient
accumulation, unused parameters, the Transformer, and the errors of misuse.
"""
import numpy as np
from collectives import expect_error  # (a script beside this one: tests/mpi/ is on sys.path)

import minigrad as mg
import minigrad.distributed as dist
import minigrad.nn.functional as F
from minigrad import nn, optim
from minigrad.nn.parallel import DistributedDataParallel as DDP
from models import Transformer

STEPS = 10
TOLERANCE = 1e-10
SHARD = 3  # rows of a batch per rank


class Net(nn.Module):
    """Embedding, Linear, LayerNorm, a head, a branch used only when asked, a buffer and,
    with `unused_layer`, a layer that is never used."""

    def __init__(self, hidden: int = 8, unused_layer: bool = False):
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.hidden = nn.Linear(6, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 3)
        self.branch = nn.Linear(hidden, 3)
        if unused_layer:
            self.never = nn.Linear(hidden, 3)
        self.register_buffer("scale", mg.tensor([1.5], dtype=mg.float64))

    def forward(self, tokens, use_branch: bool = True):
        h = self.norm(self.hidden(self.embed(tokens).mean(1)).tanh())
        out = self.head(h) * self.scale
        return out + self.branch(h) if use_branch else out


def make_net(seed: int, **kwargs) -> Net:
    mg.manual_seed(seed)
    return Net(**kwargs).double()


def batch(step: int, rows: int):
    rng = np.random.default_rng(step)
    return mg.tensor(rng.integers(0, 10, (rows, 5))), mg.tensor(rng.integers(0, 3, rows))


def shard(tensor, rank: int):
    return tensor[rank * SHARD:(rank + 1) * SHARD]


def assert_close(ddp_model, reference, what: str, grads: bool) -> float:
    worst = 0.0
    reference_params = dict(reference.named_parameters())
    for name, param in ddp_model.module.named_parameters():
        mine = param.grad if grads else param
        theirs = reference_params[name].grad if grads else reference_params[name]
        if theirs is None or mine is None:
            assert mine is None and theirs is None, f"{what}: {name} grad {mine} vs {theirs}"
            continue
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=TOLERANCE,
                                   atol=TOLERANCE, err_msg=f"{what}: {name}")
        worst = max(worst, float(np.abs(mine.numpy() - theirs.numpy()).max()))
    return worst


def train_pair(rank: int, size: int, mode: str, bucket_cap_mb=None) -> float:
    """The DDP model and the one-process reference, STEPS Adam steps each; returns the
    largest difference seen."""
    unused = mode in ("unused", "unused-on-some-ranks")
    reference = make_net(100, unused_layer=unused)
    # the other ranks start elsewhere: DDP copies rank 0's parameters and buffers
    model = make_net(100 + rank, unused_layer=unused)
    model.scale.array[...] = 1.5 + rank
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb, find_unused_parameters=unused)
    ddp_opt = optim.Adam(ddp.parameters(), lr=0.05)
    ref_opt = optim.Adam(reference.parameters(), lr=0.05)
    worst = 0.0
    for step in range(STEPS):
        if size > 1 and rank == size - 1:
            model.scale.array[...] = 9.0  # broadcast_buffers puts rank 0's back each forward
        tokens, target = batch(step, SHARD * size)
        ddp_opt.zero_grad()
        ref_opt.zero_grad()
        if mode == "no_sync":  # two micro-batches, the first accumulated locally
            tokens_2, target_2 = batch(1000 + step, SHARD * size)
            with ddp.no_sync():
                F.cross_entropy(ddp(shard(tokens, rank)), shard(target, rank)).backward()
            F.cross_entropy(ddp(shard(tokens_2, rank)), shard(target_2, rank)).backward()
            F.cross_entropy(reference(tokens), target).backward()
            F.cross_entropy(reference(tokens_2), target_2).backward()
        elif mode == "unused-on-some-ranks":  # the branch only takes part on rank 0
            loss = F.cross_entropy(ddp(shard(tokens, rank), use_branch=rank == 0),
                                   shard(target, rank))
            loss.backward()
            total = sum(F.cross_entropy(reference(shard(tokens, r), use_branch=r == 0),
                                        shard(target, r)) for r in range(size))
            (total / size).backward()
        else:
            use_branch = mode != "unused"
            F.cross_entropy(ddp(shard(tokens, rank), use_branch=use_branch),
                            shard(target, rank)).backward()
            F.cross_entropy(reference(tokens, use_branch=use_branch), target).backward()
        worst = max(worst, assert_close(ddp, reference, f"{mode} step {step} grads", True))
        ddp_opt.step()
        ref_opt.step()
    worst = max(worst, assert_close(ddp, reference, f"{mode} after {STEPS} steps", False))
    if unused:  # a parameter that no rank used keeps grad None
        assert model.never.weight.grad is None
    if mode == "unused":
        assert model.branch.weight.grad is None
    return worst


def train_transformer_pair(rank: int, size: int) -> float:
    """The paper's model (dropout 0, float64), 10 steps, tiny buckets."""
    def build():
        mg.manual_seed(5)
        return Transformer(12, 12, d_model=16, nhead=2, num_encoder_layers=1,
                           num_decoder_layers=1, dim_feedforward=32, dropout=0.0,
                           max_len=16).double()

    reference, model = build(), build()
    # what the reducer had started when each gradient arrived (these hooks run before
    # DDP's own, so the last one sees every bucket but the last one's)
    started = []
    for param in model.parameters():
        param.register_post_accumulate_grad_hook(
            lambda _: started.append(ddp.reducer.next_bucket))
    ddp = DDP(model, bucket_cap_mb=0.002)
    assert len(ddp.reducer.buckets) > 5, len(ddp.reducer.buckets)
    ddp_opt = optim.Adam(ddp.parameters(), lr=0.01)
    ref_opt = optim.Adam(reference.parameters(), lr=0.01)
    for step in range(STEPS):
        rng = np.random.default_rng(step)
        src = mg.tensor(rng.integers(1, 12, (SHARD * size, 6)))
        tgt = mg.tensor(rng.integers(1, 12, (SHARD * size, 7)))

        def loss_of(net, s, t):
            logits = net(s, t[:, :-1])
            return F.cross_entropy(logits.reshape(-1, 12), t[:, 1:].reshape(-1))

        for opt in (ddp_opt, ref_opt):
            opt.zero_grad()
        started.clear()
        loss_of(ddp, shard(src, rank), shard(tgt, rank)).backward()
        if step > 0:  # buckets rebuilt in the order of the first backward: all overlap
            assert started[-1] == len(ddp.reducer.buckets) - 1, (step, started)
        loss_of(reference, src, tgt).backward()
        ddp_opt.step()
        ref_opt.step()
    return assert_close(ddp, reference, "transformer after 10 steps", False)


def check_misuse(rank: int, size: int) -> None:
    last = size - 1
    # an unused parameter without find_unused_parameters: the next forward says which
    ddp = DDP(make_net(1, unused_layer=True))
    tokens, target = batch(0, SHARD)
    F.cross_entropy(ddp(tokens), target).backward()  # 'never' gets no gradient
    expect_error(RuntimeError, [f"rank {rank}", "never.weight", "find_unused_parameters=True"],
                 lambda: ddp(tokens))
    if size == 1:
        return
    # ranks that wrap different models or use other settings fail at construction
    expect_error(RuntimeError, [f"rank {last} differs from rank 0", "'hidden.weight'",
                                "shape (9, 6)", "shape (8, 6)"],
                 lambda: DDP(make_net(1, hidden=9 if rank == last else 8)))
    expect_error(RuntimeError, [f"rank {last} differs from rank 0",
                                "find_unused_parameters=True"],
                 lambda: DDP(make_net(1), find_unused_parameters=rank == last))
    expect_error(RuntimeError, [f"rank {last} differs from rank 0", "bucket_cap_mb"],
                 lambda: DDP(make_net(1), bucket_cap_mb=1 + (rank == last)))


def main() -> None:
    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    results = {}
    for mode, cap in (("plain", None), ("plain", 0.0005), ("no_sync", 0.0005),
                      ("unused", 0.0005), ("unused-on-some-ranks", 0.0005)):
        results[f"{mode} (bucket_cap_mb={cap})"] = train_pair(rank, size, mode, cap)
    results["transformer"] = train_transformer_pair(rank, size)
    check_misuse(rank, size)
    for name, worst in results.items():
        print(f"rank {rank}: {name}: largest difference from one process {worst:.1e}")
    print(f"rank {rank} of {size}: DDP checks passed", flush=True)


if __name__ == "__main__":
    main()
