"""A small character-level transformer language model trained on the text of Python's own
standard library, in bf16 and with every fp8q training recipe (and torchao's emulated
Float8Linear as the peer), from the same initial weights and the same batches.

    scripts/python examples/training/train_charlm.py [--steps 300] [--out build/training]

Every nn.Linear of the model (attention projections, MLP, the output head) is converted;
embeddings, norms and attention's own products stay as they are, in torch's bf16 autocast. It
writes OUT/loss.png (the evaluation loss of each run along training) and OUT/results.md (the
final evaluation losses, their ratio to bf16's, seconds per step), and prints the table.
"""

from __future__ import annotations

import argparse
import math
import sys
import sysconfig
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import fp8q.training as fpt

VOCAB = 128  # ASCII; anything else reads as "?"


def corpus(chars: int) -> torch.Tensor:
    """The first `chars` characters of the standard library's top-level modules, in name order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    text = []
    total = 0
    for f in sorted(root.glob("*.py")):
        t = f.read_text(encoding="utf-8", errors="replace")
        text.append(t)
        total += len(t)
        if total >= chars:
            break
    data = "".join(text)[:chars].encode("ascii", errors="replace")
    return torch.tensor(list(data), dtype=torch.long).clamp_(max=VOCAB - 1)


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class CharLM(torch.nn.Module):
    def __init__(self, d: int = 64, layers: int = 2, heads: int = 4, context: int = 64):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(VOCAB, d), torch.nn.Embedding(context, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def batches(data: torch.Tensor, n: int, batch: int, context: int, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(data) - context - 1, (n, batch), generator=g)
    return [torch.stack([data[s:s + context + 1] for s in row.tolist()]) for row in starts]


def loss_of(model: torch.nn.Module, b: torch.Tensor) -> torch.Tensor:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(b[:, :-1])
    return F.cross_entropy(logits.float().reshape(-1, VOCAB), b[:, 1:].reshape(-1))


def make(run: str) -> torch.nn.Module:
    torch.manual_seed(0)
    model = CharLM()
    if run == "bf16":
        return model
    if run == "torchao tensorwise (emulate)":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        return convert_to_float8_training(model, config=Float8LinearConfig(emulate=True))
    name, _, rule = run.partition(" ")
    r = fpt.recipe(name)
    if rule == "(floor rule)":  # the same recipe with OCP's floor rule for the E8M0 scales
        r = fpt.Recipe.from_dict({**r.to_dict(), "name": f"{name}_floor", **{
            role: {**r.to_dict()[role], "mx_rule": "floor"} for role in ("x", "w", "dy", "w_t", "dy_t", "x_t")}})
    return fpt.convert_to_float8_training(model, recipe=r)


def train(run: str, train_batches, eval_batches, eval_every: int) -> dict:
    model = make(run)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    steps = len(train_batches)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + math.cos(math.pi * s / steps)))
    curve = []
    t0 = time.perf_counter()
    for step, b in enumerate(train_batches, 1):
        loss = loss_of(model, b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % eval_every == 0 or step == steps:
            with torch.no_grad():
                curve.append((step, sum(loss_of(model, e).item() for e in eval_batches) / len(eval_batches)))
    seconds = (time.perf_counter() - t0) / steps
    return {"curve": curve, "final": curve[-1][1], "seconds": seconds}


RUNS = ["bf16", "torchao tensorwise (emulate)", "tensorwise", "delayed", "rowwise", "blockwise", "mxfp8_trn3",
        "mxfp8_trn3 (floor rule)", "mxfp8_rceil", "trn2_fp8", "mxfp4_trn3", "nvfp4"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out", default="build/training")
    ap.add_argument("--runs", default=",".join(RUNS))
    a = ap.parse_args()
    context = 64
    data = corpus(1_500_000)
    split = len(data) * 9 // 10
    train_batches = batches(data[:split], a.steps, a.batch, context, seed=1)
    eval_batches = batches(data[split:], 8, a.batch, context, seed=2)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    print(f"corpus: Python {sys.version.split()[0]}'s standard library, {len(data)} characters; model: 2 layers, "
          f"d 64, context {context}, batch {a.batch}, {a.steps} steps; CPU {cpu}, {torch.get_num_threads()} threads",
          flush=True)
    results = {}
    for run in a.runs.split(","):
        results[run] = train(run, train_batches, eval_batches, max(1, a.steps // 15))
        print(f"  {run:30} final eval loss {results[run]['final']:.4f}  {results[run]['seconds']:.3f} s/step", flush=True)
    base = results.get("bf16", {}).get("final")
    lines = ["| run | final eval loss | to bf16 | s / step |", "| --- | --- | --- | --- |"]
    for run, r in results.items():
        ratio = f"{r['final'] / base:.4f}" if base else "-"
        lines.append(f"| {run} | {r['final']:.4f} | {ratio} | {r['seconds']:.3f} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    colors = plt.get_cmap("tab20").colors  # one colour a run (the default cycle repeats after 10)
    for i, (run, r) in enumerate(results.items()):
        s, v = zip(*r["curve"])
        ax.plot(s, v, label=run, color=colors[(2 * i) % 20 + (2 * i) // 20], linewidth=2.2 if run == "bf16" else 1.2,
                linestyle="-" if run == "bf16" else "--")
    ax.set_xlabel("step")
    ax.set_ylabel("evaluation loss (nats / character)")
    ax.set_title("Character LM on Python's standard library: bf16 and fp8q's FP8, MX and FP4 recipes")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "loss.png")
    print(f"wrote {out / 'loss.png'} and {out / 'results.md'}")


if __name__ == "__main__":
    main()
