"""fp8q.training on torch.distributed, 2 processes on CPU (Gloo): per-tensor amaxes are
all-reduced (MAX) over the process group, so under DDP both ranks hold the same delayed-scaling
state and use the same current scales, equal to one process's over the union of their batches;
a DDP run and an FSDP2 (fully_shard) run train."""

from __future__ import annotations

import os
import tempfile
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from fp8q.training import convert_to_float8_training, recipe

B = 8  # rows per rank


def model_of(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    return convert_to_float8_training(m, recipe=recipe(name, history_length=4))


def batch(step: int) -> torch.Tensor:
    """Both ranks' rows of a step: rank r takes rows [r B, (r + 1) B)."""
    return torch.randn(2 * B, 64, generator=torch.Generator().manual_seed(step)) * (1 + step)


def state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items() if "fp8_history" in k or "fp8_scale" in k}


def worker(rank: int, init: str, out: str, name: str, wrap: str) -> None:
    # this rank's stderr (a C++ abort's message included) goes to a file run() reports
    os.dup2(os.open(f"{out}/{rank}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    try:
        model = model_of(name)
        if wrap == "ddp":
            net = torch.nn.parallel.DistributedDataParallel(model)
        else:
            from torch.distributed.fsdp import fully_shard

            for layer in (model[0], model[2]):
                fully_shard(layer)
            net = fully_shard(model)
        x = batch(0)[rank * B:(rank + 1) * B]
        y = net(x)
        y.sum().backward()  # a sum: each rank's dy rows are the union's
        first = {"y": y.detach().clone(), "state": state(model)}
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        losses = []
        for step in range(1, 9):
            opt.zero_grad()
            x = batch(0)[rank * B:(rank + 1) * B]
            loss = (net(x) - x.flip(-1)).square().mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        torch.save({"first": first, "losses": losses, "state": state(model)}, f"{out}/{rank}.tmp")
        os.replace(f"{out}/{rank}.tmp", f"{out}/{rank}.pt")  # complete or absent
        dist.barrier()  # no rank closes its connections while the other is still in a collective
    finally:
        dist.destroy_process_group()


def run(name: str, wrap: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        try:
            mp.start_processes(worker, args=(f"file://{d}/init", d, name, wrap), nprocs=2, join=True,
                               start_method="spawn")
        except mp.ProcessExitedException as e:
            logs = {r: open(f"{d}/{r}.err").read()[-4000:] for r in range(2) if os.path.exists(f"{d}/{r}.err")}
            done = all(os.path.exists(f"{d}/{r}.pt") for r in range(2))
            # A rank that dies after both saved their results died in the transport's teardown,
            # which is not what these tests check; anything earlier fails with both ranks' stderr.
            if not done:
                raise AssertionError(f"{e}\n" + "\n".join(f"rank {r} stderr:\n{t}" for r, t in logs.items())) from e
            warnings.warn(f"after both ranks saved their results: {e}; stderr: {logs}")
        return [torch.load(f"{d}/{r}.pt") for r in range(2)]


@pytest.mark.parametrize("name", ["delayed", "tensorwise"])
def test_ddp_ranks_share_scales_equal_to_one_process_over_the_union(name):
    ranks = run(name, "ddp")
    single = model_of(name)
    y = single(batch(0))
    y.sum().backward()
    for r, got in enumerate(ranks):
        # the current scales are the union's: each rank's outputs are the single process's rows
        assert torch.equal(got["first"]["y"], y.detach()[r * B:(r + 1) * B]), f"rank {r}"
        for k, v in state(single).items():
            assert torch.equal(got["first"]["state"][k], v), (r, k)
    for k, v in ranks[0]["state"].items():
        assert torch.equal(v, ranks[1]["state"][k]), k
    assert ranks[0]["losses"][-1] < ranks[0]["losses"][0]


def test_fsdp2_trains():
    ranks = run("delayed", "fsdp")
    for k, v in ranks[0]["state"].items():
        assert torch.equal(v, ranks[1]["state"][k]), k
    assert ranks[0]["losses"][-1] < ranks[0]["losses"][0]
