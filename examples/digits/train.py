#!/usr/bin/python3
"""Trains the bundled example model: a 64 -> 128 -> 64 -> 10 ReLU MLP on the 8x8 digits data
set that scikit-learn ships (Debian: python3-sklearn), and writes

  model/config.json          Hugging Face-style configuration (torch_dtype bfloat16)
  model/model.safetensors    mlp.fc{1,2,3}.weight [out, in] and mlp.fc{1,2,3}.bias [out], BF16
  data/test.safetensors      the held-out split: inputs F32 [n, 64] (pixel / 16), labels I64 [n]
  data/calib.safetensors     mlp.fc{1,2,3}.input F32 [128, in]: training-set samples of each
                             linear layer's input (for `fp8q quantize --calib-data`)
  data/expected.json         accuracy of the BF16 model on the test split, computed here in fp32

Only this script needs numpy and scikit-learn; evaluation (fp8q-eval-digits) and the tests
read the committed files. Deterministic: fixed seeds, one BLAS thread (the order of the
sums in a multi-threaded BLAS could change the last bits of the weights between runs).

Usage: /usr/bin/python3 examples/digits/train.py [--out DIR]   (default: beside this script)
"""

import os

os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
os.environ.setdefault('OMP_NUM_THREADS', '1')

import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 20240607
SIZES = [64, 128, 64, 10]  # input, hidden..., classes
EPOCHS = 150
BATCH = 32
LR = 1e-3
WEIGHT_DECAY = 1e-4
CALIB_ROWS = 128


# ---- safetensors (written here with the standard library; the format is in
# ---- checkpoint/include/fp8q/checkpoint/safetensors.hpp) ----------------------------------
def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, dtype string, shape, raw little-endian bytes), in file order."""
    header, offset = {}, 0
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': list(shape), 'data_offsets': [offset, offset + len(raw)]}
        offset += len(raw)
    if metadata:
        header['__metadata__'] = metadata
    text = json.dumps(header, separators=(',', ':'), sort_keys=True).encode()
    text += b' ' * (-(8 + len(text)) % 8)  # data section starts at a multiple of 8
    tmp = path + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(struct.pack('<Q', len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)
    os.replace(tmp, path)


def to_bf16_bits(x):
    """fp32 -> bf16 bit patterns, round to nearest even (no NaN/Inf here)."""
    bits = np.ascontiguousarray(x, dtype='<f4').view('<u4').astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype('<u2')


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view('<f4')


# ---- the model -------------------------------------------------------------------------------
def init_params(rng):
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        w = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=(fan_out, fan_in))  # He init for ReLU
        params.append([w, np.zeros(fan_out)])
    return params


def forward(params, x):
    """Returns the logits and every linear layer's input (for backprop and calibration)."""
    inputs = []
    h = x
    for i, (w, b) in enumerate(params):
        inputs.append(h)
        h = h @ w.T + b
        if i + 1 < len(params):
            h = np.maximum(h, 0.0)
    return h, inputs


def train(params, x, y, rng):
    """Adam on mean cross-entropy + L2 weight decay, minibatches in a seeded shuffled order."""
    m = [[np.zeros_like(p) for p in layer] for layer in params]
    v = [[np.zeros_like(p) for p in layer] for layer in params]
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        for start in range(0, len(x), BATCH):
            idx = order[start:start + BATCH]
            logits, inputs = forward(params, x[idx])
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            grad = p
            grad[np.arange(len(idx)), y[idx]] -= 1.0
            grad /= len(idx)
            step += 1
            for i in reversed(range(len(params))):
                w, b = params[i]
                gw = grad.T @ inputs[i] + WEIGHT_DECAY * w
                gb = grad.sum(axis=0)
                if i > 0:
                    grad = (grad @ w) * (inputs[i] > 0)
                for j, g in enumerate((gw, gb)):
                    m[i][j] = beta1 * m[i][j] + (1 - beta1) * g
                    v[i][j] = beta2 * v[i][j] + (1 - beta2) * g * g
                    mh = m[i][j] / (1 - beta1 ** step)
                    vh = v[i][j] / (1 - beta2 ** step)
                    params[i][j] = params[i][j] - LR * mh / (np.sqrt(vh) + eps)
        if (epoch + 1) % 25 == 0:
            acc = (forward(params, x)[0].argmax(axis=1) == y).mean()
            print(f'epoch {epoch + 1:4d}: training accuracy {acc:.4f}')


def evaluate_fp32(params32, x, y):
    """Forward pass in fp32 with the given (fp32) weights: the same arithmetic type as
    fp8q-eval-digits. Returns (correct, smallest top-2 logit margin)."""
    logits = forward(params32, x.astype(np.float32))[0].astype(np.float32)
    top2 = np.sort(logits, axis=1)[:, -2:]
    return int((logits.argmax(axis=1) == y).sum()), float((top2[:, 1] - top2[:, 0]).min())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixels 0..16 -> [0, 1], exact in fp32
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=0.2, random_state=SEED % 2**32, stratify=y)
    print(f'digits: {len(x)} images, {len(x_train)} for training, {len(x_test)} held out')

    rng = np.random.default_rng(SEED)
    params = init_params(rng)
    train(params, x_train.astype(np.float64), y_train, rng)

    # Store BF16 (the checkpoint quantizer's main input); evaluate what is stored.
    bf16 = [[to_bf16_bits(p.astype(np.float32)) for p in layer] for layer in params]
    stored = [[from_bf16_bits(p) for p in layer] for layer in bf16]
    fp32_correct, _ = evaluate_fp32([[p.astype(np.float32) for p in l] for l in params], x_test, y_test)
    correct, margin = evaluate_fp32(stored, x_test, y_test)
    n = len(x_test)
    print(f'test accuracy: fp32 weights {fp32_correct}/{n} = {fp32_correct / n:.4f}, '
          f'stored bf16 weights {correct}/{n} = {correct / n:.4f} (smallest top-2 margin {margin:.3g})')

    model_dir = os.path.join(args.out, 'model')
    data_dir = os.path.join(args.out, 'data')
    os.makedirs(model_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)

    tensors = []
    for i, (w, b) in enumerate(bf16, start=1):
        tensors.append((f'mlp.fc{i}.weight', 'BF16', w.shape, w.tobytes()))
        tensors.append((f'mlp.fc{i}.bias', 'BF16', b.shape, b.tobytes()))
    write_safetensors(os.path.join(model_dir, 'model.safetensors'), tensors, {'format': 'pt'})

    config = {
        'architectures': ['DigitsMLP'],
        'model_type': 'digits_mlp',
        'input_size': SIZES[0],
        'hidden_sizes': SIZES[1:-1],
        'num_labels': SIZES[-1],
        'hidden_act': 'relu',
        'torch_dtype': 'bfloat16',
        'layers': [f'mlp.fc{i}' for i in range(1, len(SIZES))],
        'input_preprocessing': '8x8 digit image, row-major, pixel value (0..16) / 16',
    }
    with open(os.path.join(model_dir, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)
        f.write('\n')

    write_safetensors(os.path.join(data_dir, 'test.safetensors'), [
        ('inputs', 'F32', x_test.shape, np.ascontiguousarray(x_test, dtype='<f4').tobytes()),
        ('labels', 'I64', y_test.shape, np.ascontiguousarray(y_test, dtype='<i8').tobytes()),
    ])

    # Calibration samples: the inputs each linear layer sees (post-ReLU for fc2, fc3) on the
    # first CALIB_ROWS training images, computed with the stored BF16 weights.
    _, inputs = forward(stored, x_train[:CALIB_ROWS].astype(np.float32))
    write_safetensors(os.path.join(data_dir, 'calib.safetensors'), [
        (f'mlp.fc{i}.input', 'F32', h.shape, np.ascontiguousarray(h, dtype='<f4').tobytes())
        for i, h in enumerate(inputs, start=1)])

    with open(os.path.join(data_dir, 'expected.json'), 'w') as f:
        json.dump({'samples': n, 'correct': correct, 'accuracy': correct / n,
                   'smallest_top2_margin': margin, 'fp32_weights_correct': fp32_correct,
                   'seed': SEED, 'epochs': EPOCHS}, f, indent=2)
        f.write('\n')


if __name__ == '__main__':
    main()
