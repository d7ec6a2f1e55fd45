#!/usr/bin/env bash
# fp8q quantize / verify / inspect: the checkpoint verbs' command-line contract. Each layout
# quantizes a small model directory and verifies; --json is JSON; hostile input exits 2 with
# a message naming the problem and leaves no output directory or staging directory; an
# existing OUT_DIR needs --force; the input is never modified; --threads does not change a
# byte. Usage: checkpoint_cli_test.sh PATH/TO/fp8q
set -uo pipefail
fp8q="$(realpath "$1")"
py=/usr/bin/python3
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
# Only the names the test expects in $tmp (no staging leftovers ".*.tmp.*").
no_leftovers() { ! ls -A "$tmp" | grep -q '^\.'; }

# A small BF16 model directory, written with the standard library only (values from a fixed seed).
"$py" - "$tmp/model" <<'PY'
import json, os, random, struct, sys
d = sys.argv[1]; os.makedirs(d)
rng = random.Random(7)
def bf16(vals): return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in vals)
def tensor(shape, scale=0.05):
    n = 1
    for s in shape: n *= s
    return bf16([rng.gauss(0, scale) for _ in range(n)])
# down_proj's in_features 160 is not a multiple of 128: the block layouts keep it (and say so)
specs = [("model.embed_tokens.weight", [40, 128]), ("model.layers.0.input_layernorm.weight", [128]),
         ("model.layers.0.self_attn.q_proj.weight", [128, 128]), ("model.layers.0.mlp.up_proj.weight", [256, 128]),
         ("model.layers.0.mlp.down_proj.weight", [128, 160]), ("lm_head.weight", [40, 128])]
header, blobs, off = {}, [], 0
for name, shape in specs:
    b = tensor(shape); header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(b)]}
    off += len(b); blobs.append(b)
h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h))); f.write(h); [f.write(b) for b in blobs]
json.dump({"architectures": ["LlamaForCausalLM"]}, open(os.path.join(d, "config.json"), "w"))
PY
sum_before="$(cat "$tmp/model"/* | md5sum)"

for verb in quantize verify inspect; do
  check "$verb --help" 0 '' -- "$fp8q" "$verb" --help
done
for layout in hf-fp8 ct-fp8 ct-mxfp8 trn2 trn3-mx; do
  check "quantize $layout" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-$layout" --layout "$layout"
  expect "$layout report has SQNR" grep -q 'SQNR' "$tmp/out"
  expect "$layout report says smaller" grep -q 'x smaller)' "$tmp/out"
  expect "$layout plain progress lines (not a terminal)" grep -q '^\[1/6\]' "$tmp/err"
  check "verify $layout" 0 '' -- "$fp8q" verify "$tmp/q-$layout" --against "$tmp/model"
  expect "verify $layout OK" grep -q 'verify: OK' "$tmp/out"
done
check "quantize --json" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-json" --layout ct-fp8 --granularity block128x128 --json
expect "--json parses" "$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["summary"]["quantized"] == 2, j["summary"]' "$tmp/out"
expect "--json: block layouts keep a partial block" "$py" -c 'import json,sys; t={x["name"]: x for x in json.load(open(sys.argv[1]))["tensors"]}["model.layers.0.mlp.down_proj.weight"]; assert not t["quantized"] and "in_features 160 is not a multiple of 128" in t["reason"], t' "$tmp/out"
# a checkpoint written before fp8q.granularity names its weight scales in compressed-tensors'
# words (fp8q.strategy): verify still reads it, and refuses a word it does not know
cp -r "$tmp/q-json" "$tmp/q-old"
"$py" - "$tmp/q-old/model.safetensors" block <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
assert hdr["__metadata__"].pop("fp8q.granularity") == "block128x128"
hdr["__metadata__"]["fp8q.strategy"] = sys.argv[2]
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + raw[8 + n:])
PY
check "verify, fp8q.strategy of older files" 0 '' -- "$fp8q" verify "$tmp/q-old" --against "$tmp/model"
"$py" - "$tmp/q-json/model.safetensors" "$tmp/q-old/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
hdr["__metadata__"].pop("fp8q.granularity")
hdr["__metadata__"]["fp8q.strategy"] = "block128x128"
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + raw[8 + n:])
PY
check "verify, an unknown fp8q.strategy" 2 'fp8q.strategy = "block128x128" is not a strategy' -- "$fp8q" verify "$tmp/q-old" --against "$tmp/model"

check "inspect dir" 0 '' -- "$fp8q" inspect "$tmp/q-hf-fp8"
expect "inspect lists weight_scale_inv" grep -q 'weight_scale_inv' "$tmp/out"
expect "inspect shows quant_method" grep -q '"quant_method": "fp8"' "$tmp/out"
check "inspect --json file" 0 '' -- "$fp8q" inspect "$tmp/model/model.safetensors" --json
expect "inspect --json parses" "$py" -c 'import json,sys; assert len(json.load(open(sys.argv[1]))["tensors"]) == 6' "$tmp/out"
check "trn3-mx --pack wrapX" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-wrapx" --layout trn3-mx --pack wrapX
expect "a packed model that grew says larger, and why" grep -q 'x larger: [0-9]* quantized weights* \(is\|are\) padded to the layout.s whole tiles' "$tmp/out"
check "verify wrapX" 0 '' -- "$fp8q" verify "$tmp/q-wrapx" --against "$tmp/model"
# trn3-mx's MXFP4: --elem e2m1, read back by verify from the shards' fp8q.weight_format
check "trn3-mx --elem e2m1 --pack 1x32" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-mxfp4" --layout trn3-mx --elem e2m1 --pack 1x32
expect "MXFP4 config says e2m1" grep -q '"fmt": "e2m1"' "$tmp/q-mxfp4/config.json"
check "verify MXFP4" 0 '' -- "$fp8q" verify "$tmp/q-mxfp4" --against "$tmp/model"
check "inspect MXFP4" 0 '' -- "$fp8q" inspect "$tmp/q-mxfp4"
expect "inspect shows the e2m1 weight format" grep -q 'fp8q.weight_format = e2m1' "$tmp/out"
check "--elem on another layout" 2 '--elem applies to --layout trn3-mx only \(ct-fp8 fixes its element format\)' -- \
  "$fp8q" quantize "$tmp/model" "$tmp/q-bad" --layout ct-fp8 --elem e2m1
check "--elem trn3-mx does not take" 2 '--elem: trn3-mx takes e4m3fn \(MXFP8\) or e2m1 \(MXFP4\), not e5m2' -- \
  "$fp8q" quantize "$tmp/model" "$tmp/q-bad" --layout trn3-mx --elem e5m2
check "--elem not a format" 2 "--elem: 'fp4' is not an element format" -- \
  "$fp8q" quantize "$tmp/model" "$tmp/q-bad" --layout trn3-mx --elem fp4
expect "no output for a refused --elem" test ! -e "$tmp/q-bad"

# thread count: the same bytes
check "threads 1" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/t1" --layout hf-fp8 --threads 1
check "threads 3" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/t3" --layout hf-fp8 --threads 3
expect "same bytes for 1 and 3 threads" cmp -s "$tmp/t1/model.safetensors" "$tmp/t3/model.safetensors"

# existing OUT_DIR, options
check "existing OUT_DIR" 2 'exists; --force' -- "$fp8q" quantize "$tmp/model" "$tmp/t1" --layout hf-fp8
check "--force replaces" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/t1" --layout trn2 --force
expect "--force wrote trn2" grep -q '"layout": "trn2"' "$tmp/t1/config.json"
check "OUT_DIR is the input" 2 'overlaps the input' -- "$fp8q" quantize "$tmp/model" "$tmp/model" --layout hf-fp8 --force
check "bad layout" 2 'not one of' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout fp4
check "strategy on hf-fp8" 2 'hf-fp8 always' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout hf-fp8 --strategy tensor
check "granularity on hf-fp8" 2 '--granularity tensor does not apply' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout hf-fp8 --granularity tensor
check "a granularity ct-fp8 does not store" 2 'ct-fp8 stores weights per tensor, per row .output channel. or in 128x128 blocks .--granularity tensor row block128x128., not block1x128' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout ct-fp8 --granularity block1x128
check "--granularity and its alias --strategy" 2 'excludes' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout ct-fp8 --granularity row --strategy channel
check "--strategy in its own words" 2 "--strategy: 'row' is not one of tensor channel block" -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout ct-fp8 --strategy row
check "bad regex" 2 'regular expression' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout hf-fp8 --ignore '('
check "calib on hf-fp8" 2 'input scales' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout hf-fp8 --calib-data "$tmp/model/model.safetensors"

# hostile input: exit 2, a message, nothing left behind
mkdir "$tmp/bad" && cp "$tmp/model/config.json" "$tmp/bad/"
printf '\xe8\x03\x00\x00\x00\x00\x00\x00{}' > "$tmp/bad/model.safetensors"
check "header beyond file" 2 'beyond' -- "$fp8q" quantize "$tmp/bad" "$tmp/x" --layout hf-fp8
printf '{"weight_map": {"lm_head.weight": "../model/model.safetensors"}}' > "$tmp/bad/model.safetensors.index.json"
check "index outside the directory" 2 'not a file name|outside' -- "$fp8q" quantize "$tmp/bad" "$tmp/x" --layout hf-fp8
rm "$tmp/bad/model.safetensors.index.json"
"$py" - "$tmp/model/model.safetensors" "$tmp/bad/model.safetensors" <<'PY'
import struct, sys, json
data = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", data[:8])[0]; h = json.loads(data[8:8 + n])
b = 8 + n + h["model.layers.0.mlp.up_proj.weight"]["data_offsets"][0]
data[b + 2 * 140: b + 2 * 140 + 2] = b"\xc0\x7f"  # element 140 = row 1, column 12: NaN
open(sys.argv[2], "wb").write(data)
PY
check "NaN weight" 2 'model.layers.0.mlp.up_proj.weight.*element 140 \(row 1, column 12\) is NaN' -- "$fp8q" quantize "$tmp/bad" "$tmp/x" --layout hf-fp8
check "--allow-nonfinite" 0 '' -- "$fp8q" quantize "$tmp/bad" "$tmp/x" --layout hf-fp8 --allow-nonfinite
rm -rf "$tmp/x"
mkdir "$tmp/other" && cp "$tmp/model/config.json" "$tmp/other/"
"$py" -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[-1] ^= 1; open(sys.argv[2], "wb").write(d)' \
  "$tmp/model/model.safetensors" "$tmp/other/model.safetensors"  # lm_head (kept) differs in one bit
check "verify against another model" 1 '' -- "$fp8q" verify "$tmp/q-hf-fp8" --against "$tmp/other"
expect "verify names the changed tensor" grep -q 'PROBLEM: tensor "lm_head.weight"' "$tmp/out"

# a quantized input is converted (its exact values), each weight's path and changes reported
check "ct-mxfp8 into trn3-mx" 0 '' -- "$fp8q" quantize "$tmp/q-ct-mxfp8" "$tmp/c-trn3" --layout trn3-mx --require-exact
expect "conversion reported exact" grep -q 'from ct-mxfp8: re-encoded, every value exact' "$tmp/out"
expect "conversion summary" grep -q 'converted 3 weights of a quantized input: 3 with every value exact' "$tmp/out"
check "verify the conversion against the original" 0 '' -- "$fp8q" verify "$tmp/c-trn3" --against "$tmp/model"
check "verify the conversion against its quantized input" 0 '' -- "$fp8q" verify "$tmp/c-trn3" --against "$tmp/q-ct-mxfp8"
expect "verify against a quantized input: exact" grep -q 'SQNR inf dB' "$tmp/out"
check "trn3-mx wrapX" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-wrapx2" --layout trn3-mx --pack wrapX
check "packed trn3-mx into ct-mxfp8, every value kept" 0 '' -- "$fp8q" quantize "$tmp/q-wrapx2" "$tmp/c-unpacked" --layout ct-mxfp8 --require-exact
check "ct-mxfp8 into ct-mxfp4" 0 '' -- "$fp8q" quantize "$tmp/q-ct-mxfp8" "$tmp/c-fp4" --layout ct-mxfp4
check "verify: every tensor of both accounted" 0 '' -- "$fp8q" verify "$tmp/c-fp4" --against "$tmp/q-ct-mxfp8"
check "ct-fp8 into trn3-mx --json" 0 '' -- "$fp8q" quantize "$tmp/q-ct-fp8" "$tmp/c-json" --layout trn3-mx --json
expect "conversion in --json" "$py" -c 'import json,sys; t=[x for x in json.load(open(sys.argv[1]))["tensors"] if "conversion" in x]; assert len(t) == 3 and all(x["conversion"]["path"] == "requantized" and x["conversion"]["changed"] > 0 for x in t), t' "$tmp/out"
check "--require-exact where a value changes" 2 '--require-exact: tensor "model.layers.0.self_attn.q_proj.weight" .ct-fp8 -> trn3-mx.: [0-9]+ of 16384 values would change' -- "$fp8q" quantize "$tmp/q-ct-fp8" "$tmp/x" --layout trn3-mx --require-exact
expect "--require-exact wrote nothing" test ! -e "$tmp/x"
mkdir "$tmp/awq" && cp "$tmp/model/model.safetensors" "$tmp/awq/" && echo '{"quantization_config": {"quant_method": "awq"}}' > "$tmp/awq/config.json"
check "a quant_method fp8q does not read" 2 'quant_method is "awq"' -- "$fp8q" quantize "$tmp/awq" "$tmp/x" --layout trn2
check "--like on a layout it does not apply to" 2 '--like compressed-tensors applies to the compressed-tensors layouts' -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout trn2 --like compressed-tensors
check "--like on a quantized input" 2 '--like: the input is already quantized' -- "$fp8q" quantize "$tmp/q-ct-fp8" "$tmp/x" --layout ct-fp8 --like compressed-tensors
check "--like names its choices" 2 "--like: 'ct' is not one of fp8q compressed-tensors" -- "$fp8q" quantize "$tmp/model" "$tmp/x" --layout ct-fp8 --like ct
check "inspect: the layout quantize reads" 0 '' -- "$fp8q" inspect "$tmp/q-ct-mxfp8"
expect "inspect names the layout" grep -q 'read as: layout ct-mxfp8 (__metadata__ fp8q.layout = "ct-mxfp8")' "$tmp/out"
expect "inspect names each tensor's role" grep -Eq 'weight_scale +U8 +\[128, 4\] +scales of model.layers.0.self_attn.q_proj' "$tmp/out"
check "inspect: a quantized model fp8q cannot read is still listed" 0 '' -- "$fp8q" inspect "$tmp/awq"
expect "inspect says why" grep -q 'read as: not readable by fp8q quantize: config.json: quantization_config.quant_method is "awq"' "$tmp/out"
# every kept 2-D weight is listed as not converted (a name cannot tell an Embedding from a Linear)
expect "ct-fp8 ignore lists the kept 2-D weights" "$py" -c 'import json,sys; i=json.load(open(sys.argv[1]))["quantization_config"]["ignore"]; assert i == ["lm_head", "model.embed_tokens"], i' "$tmp/q-ct-fp8/config.json"

# a Hugging Face hub cache snapshot: every file a link into ../../blobs
hub="$tmp/hub/models--org--m"
mkdir -p "$hub/blobs" "$hub/snapshots/abc"
for f in config.json model.safetensors; do
  cp "$tmp/model/$f" "$hub/blobs/$f.blob" && ln -s "../../blobs/$f.blob" "$hub/snapshots/abc/$f"
done
echo '{"tokenizer": 1}' > "$hub/blobs/tok.blob" && ln -s ../../blobs/tok.blob "$hub/snapshots/abc/tokenizer.json"
check "hub cache snapshot" 0 '' -- "$fp8q" quantize "$hub/snapshots/abc" "$tmp/q-hub" --layout ct-fp8
expect "hub: the linked tokenizer is copied as a file" test -f "$tmp/q-hub/tokenizer.json" -a ! -L "$tmp/q-hub/tokenizer.json"
expect "hub: same weights as from the plain directory" cmp -s "$tmp/q-hub/model.safetensors" "$tmp/q-ct-fp8/model.safetensors"
ln -s "$tmp/model/config.json" "$tmp/hub/elsewhere.json" && rm "$hub/snapshots/abc/config.json" && ln -s ../../../elsewhere.json "$hub/snapshots/abc/config.json"
check "hub: a link outside the repository" 2 'outside the model directory' -- "$fp8q" quantize "$hub/snapshots/abc" "$tmp/x" --layout ct-fp8

# names that are not UTF-8 in --json output, and other weights' index files
mkdir "$tmp/m2" && cp "$tmp/model"/* "$tmp/m2/" && touch "$tmp/m2/$(printf 'tok\xff.txt')"
echo '{"weight_map": {}}' > "$tmp/m2/pytorch_model.bin.index.json"
check "--json with a non-UTF-8 file name" 0 '' -- "$fp8q" quantize "$tmp/m2" "$tmp/q-m2" --layout ct-fp8 --json
expect "--json still parses" "$py" -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$tmp/out"
expect "another format's index is not copied" test ! -e "$tmp/q-m2/pytorch_model.bin.index.json"
check "OUT_DIR ." 2 "give the new directory's own name" -- bash -c "cd '$tmp/q-m2' && '$fp8q' quantize ../model . --layout hf-fp8 --force"

# verify reads config.json and the static input scales
"$py" - "$tmp/model/model.safetensors" "$tmp/calib.safetensors" <<'PY'
import json, random, struct, sys
h = json.loads(open(sys.argv[1], "rb").read()[8:8 + struct.unpack("<Q", open(sys.argv[1], "rb").read(8))[0]])
rng = random.Random(3); header, blobs, off = {}, [], 0
for name, t in h.items():
    if name.endswith(".weight") and len(t["shape"]) == 2 and "embed" not in name and "lm_head" not in name:
        b = struct.pack("<%df" % (4 * t["shape"][1]), *[rng.gauss(0, 1) for _ in range(4 * t["shape"][1])])
        header[name[:-7] + ".input"] = {"dtype": "F32", "shape": [4, t["shape"][1]], "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b)
j = json.dumps(header).encode(); j += b" " * (-len(j) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
PY
check "ct-fp8 with static input scales" 0 '' -- "$fp8q" quantize "$tmp/model" "$tmp/q-static" --layout ct-fp8 --calib-data "$tmp/calib.safetensors"
check "verify static scales" 0 '' -- "$fp8q" verify "$tmp/q-static" --against "$tmp/model"
"$py" - "$tmp/q-static/model.safetensors" <<'PY'
import json, struct, sys
d = bytearray(open(sys.argv[1], "rb").read()); n = struct.unpack("<Q", d[:8])[0]; h = json.loads(d[8:8 + n])
a = 8 + n + h["model.layers.0.mlp.up_proj.input_scale"]["data_offsets"][0]
d[a:a + 2] = b"\xc0\x7f"  # BF16 NaN
open(sys.argv[1], "wb").write(d)
PY
check "verify a NaN input scale" 1 '' -- "$fp8q" verify "$tmp/q-static" --against "$tmp/model"
expect "verify names the input scale" grep -q 'input_scale" is nan: an input scale must be finite and positive' "$tmp/out"
echo '{"architectures": ["LlamaForCausalLM"]}' > "$tmp/q-static/config.json"
check "verify without quantization_config" 1 '' -- "$fp8q" verify "$tmp/q-static" --against "$tmp/model"
expect "verify names config.json" grep -q 'config.json has no quantization_config' "$tmp/out"

# past a file-size limit the write fails and is cleaned up (SIGXFSZ would kill the process)
check "ulimit -f" 2 'File too large' -- bash -c "ulimit -f 8; exec '$fp8q' quantize '$tmp/model' '$tmp/x' --layout ct-fp8"
check "ulimit -f, quantize-tensors" 2 'File too large' -- bash -c "ulimit -f 8; exec '$fp8q' quantize-tensors '$tmp/model/model.safetensors' '$tmp/x.safetensors' --scheme mx"
expect "no partial quantize-tensors output" test ! -e "$tmp/x.safetensors"

# SIGTERM while the staging directory exists: exit 143, "interrupted", nothing left behind
"$py" - "$tmp/big" <<'PY'
import json, os, struct, sys
d = sys.argv[1]; os.makedirs(d)
header, off, names = {}, 0, ["model.layers.%d.mlp.up_proj.weight" % i for i in range(24)]
for name in names:
    header[name] = {"dtype": "BF16", "shape": [1024, 1024], "data_offsets": [off, off + 2 * 1024 * 1024]}; off += 2 * 1024 * 1024
j = json.dumps(header).encode(); j += b" " * (-len(j) % 8)
clear = bytes(i & 0xBF for i in range(256))  # high byte below 0x40 (or 0xC0): finite, |x| < 2
with open(os.path.join(d, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(j)) + j)
    for _ in names:
        b = bytearray(os.urandom(2 * 1024 * 1024)); b[1::2] = bytes(b[1::2]).translate(clear); f.write(b)
json.dump({"architectures": ["X"]}, open(os.path.join(d, "config.json"), "w"))
PY
"$fp8q" quantize "$tmp/big" "$tmp/x" --layout ct-fp8 --threads 1 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 2000); do ls -A "$tmp" | grep -q '^\.x\.tmp\.' && break; sleep 0.005; done
kill -TERM "$pid"
wait "$pid"
rc=$?
expect "SIGTERM: exit 143 (got $rc)" test "$rc" -eq 143
expect "SIGTERM: says interrupted" grep -q 'interrupted' "$tmp/err"
expect "SIGTERM: no output directory" test ! -e "$tmp/x"
expect "no output or staging directory left" test ! -e "$tmp/x"
expect "no leftovers" no_leftovers
expect "input unchanged" test "$(cat "$tmp/model"/* | md5sum)" = "$sum_before"

echo "checkpoint cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
