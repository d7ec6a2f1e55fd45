#!/usr/bin/env bash
# The main job on the bundled example (examples/digits/README.md): installs what is missing,
# builds, quantizes the digits classifier (a BF16 Hugging Face-style model directory) into
# every checkpoint layout with `fp8q quantize`, printing each report, then measures the
# accuracy of the original and of each quantized model on the held-out test images and
# prints one table; then the same for a real trained model (examples/minilm/run.py). The
# quantized models are left in build/digits/ and build/minilm/ for `fp8q inspect` and
# `fp8q verify`. (The element-format example is examples/quantize_activations.sh build/fp8q.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FP8Q_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"  # Eigen included: the example's forward pass
"$root/scripts/build.sh" >/dev/null

fp8q="$build/fp8q"
evaluate="$build/fp8q-eval-digits"
model="$root/examples/digits/model"
test_set="$root/examples/digits/data/test.safetensors"
calib="$root/examples/digits/data/calib.safetensors"
out="$build/digits"
mkdir -p "$out"

# name | fp8q quantize options
runs=(
  "hf-fp8|--layout hf-fp8"
  "ct-fp8 tensor|--layout ct-fp8 --granularity tensor"
  "ct-fp8 channel|--layout ct-fp8 --granularity row"
  "ct-fp8 block|--layout ct-fp8 --granularity block128x128"
  "ct-fp8 tensor, static input scales|--layout ct-fp8 --granularity tensor --calib-data $calib"
  "ct-mxfp8|--layout ct-mxfp8"
  "ct-mxfp4|--layout ct-mxfp4"
  "ct-nvfp4|--layout ct-nvfp4"
  "trn2 channel|--layout trn2 --granularity row"
  "trn2 block|--layout trn2 --granularity block128x128"
  "trn3-mx|--layout trn3-mx"
  "trn3-mx packed wrapX|--layout trn3-mx --pack wrapX"
  "trn3-mx MXFP4|--layout trn3-mx --elem e2m1"
  "trn3-mx MXFP4 packed wrapX|--layout trn3-mx --elem e2m1 --pack wrapX"
)

rows=()
bytes_of() { cat "$1"/*.safetensors | wc -c; }
# "correct accuracy agree max|dlogit|" of a model, its predictions compared with the original's
accuracy_of() {
  "$evaluate" "$1" "$test_set" --reference "$model" |
    awk '/^accuracy/ {c = $2; a = $4} /^agree/ {g = $2; d = $NF} END {print c, a, g, d}'
}
rows+=("original (BF16)|$(bytes_of "$model")|$(accuracy_of "$model")")

echo "== The digits classifier: 64 -> 128 -> 64 -> 10 MLP, BF16, ${model#"$root"/}"
echo
if "$fp8q" quantize --help >/dev/null 2>&1; then
  for run in "${runs[@]}"; do
    name="${run%%|*}"
    read -r -a options <<< "${run#*|}"
    dir="$out/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-' | tr -s '-' | sed 's/-$//')"
    echo "== fp8q quantize examples/digits/model ${dir#"$root"/} ${options[*]//"$root"\//}"
    "$fp8q" quantize "$model" "$dir" "${options[@]}" --force
    echo
    rows+=("$name|$(bytes_of "$dir")|$(accuracy_of "$dir")")
  done
  # A quantized checkpoint converted from its exact values (docs/checkpoints.md, "Quantized
  # inputs"): compressed-tensors FP8 per channel, as llm-compressor writes it, into Trainium2's
  # and Trainium3's layouts, each weight reported exact or with its changed values.
  for target in trn2 trn3-mx; do
    dir="$out/ct-fp8-channel-to-$target"
    echo "== fp8q quantize ${out#"$root"/}/ct-fp8-channel ${dir#"$root"/} --layout $target"
    "$fp8q" quantize "$out/ct-fp8-channel" "$dir" --layout "$target" --force
    echo
    rows+=("ct-fp8 channel -> $target|$(bytes_of "$dir")|$(accuracy_of "$dir")")
  done
  # ... and written back in BF16, each value rounded once (docs/checkpoints.md, "Dequantized outputs").
  dir="$out/ct-fp8-channel-to-bf16"
  echo "== fp8q dequantize ${out#"$root"/}/ct-fp8-channel ${dir#"$root"/} --dtype bf16"
  "$fp8q" dequantize "$out/ct-fp8-channel" "$dir" --dtype bf16 --force
  echo
  rows+=("ct-fp8 channel -> bf16|$(bytes_of "$dir")|$(accuracy_of "$dir")")
else
  echo "(\`fp8q quantize\` is not in this build: only the original model is evaluated)"
  echo
fi

echo "== Accuracy on the held-out test images (fp8q-eval-digits: each layout dequantized by its"
echo "   public definition, forward pass in fp32; 'same' = predictions equal to the original's)"
echo
printf '%-36s %8s %9s %9s %9s %11s\n' "model" "bytes" "correct" "accuracy" "same" "max|dlogit|"
for row in "${rows[@]}"; do
  IFS='|' read -r name size acc <<< "$row"
  read -r correct percent same dlogit <<< "$acc"
  printf '%-36s %8s %9s %9s %9s %11.4f\n' "$name" "$size" "$correct" "$percent" "$same" "$dlogit"
done
echo "(the 128x128 block layouts keep this model's weights in BF16: none has both dimensions"
echo " multiples of 128, which the loaders need; docs/checkpoints.md)"
echo
echo
echo "== A real trained model: sentence-transformers' all-MiniLM-L6-v2 (BERT, 22M parameters, F32),"
echo "   each layout loaded back by transformers; cosine of 10 sentence embeddings with the original's"
echo
"$root/scripts/python" "$root/examples/minilm/run.py" --fp8q "$fp8q" --out "$build/minilm" 2>/dev/null
echo
rel="${out#"$root"/}"
echo "Quantized models: $rel/  (try: ${build#"$root"/}/fp8q inspect $rel/ct-fp8-channel;" \
     "${build#"$root"/}/fp8q verify $rel/ct-fp8-channel --against examples/digits/model)"
