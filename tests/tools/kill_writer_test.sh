#!/usr/bin/env bash
# fp8q quantize / quantize-tensors killed with SIGKILL at seeded random points from before the
# start to past the end. SIGKILL runs no handler, so this checks what rename(2) alone
# guarantees: OUT is absent, the old one, or byte-identical to a verified reference run (never
# partial), and the same command run again succeeds with the reference bytes, stale
# ".OUT.tmp.*" / ".OUT.old.*" left beside it or not. A full file system (a 1 MiB tmpfs; root
# only) is exit 2 with a message naming OUT and "No space left on device", leaving nothing on
# it. Usage: kill_writer_test.sh PATH/TO/fp8q
set -uo pipefail
fp8q="$(realpath "$1")"
py=/usr/bin/python3
# shellcheck source=check_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"
full="$tmp/full"  # the tmpfs of the full-disk cases
bg=""             # the fp8q run in flight
trap '[ -n "$bg" ] && kill -KILL "$bg" 2>/dev/null; mountpoint -q "$full" 2>/dev/null && umount "$full"; rm -rf "$tmp"' EXIT
seed=12345
echo "seed $seed"

# 32 BF16 weights of 1024 x 1024 (64 MiB: a quantize run ~0.1 s on one core) and a kept
# norm, as one model.safetensors (model/) and as two shards with an index (model2/), both with
# a tokenizer.json that quantize copies; values from the fixed seed.
"$py" - "$tmp" "$seed" <<'PY'
import json, os, random, struct, sys
root, rng = sys.argv[1], random.Random(int(sys.argv[2]))
clear = bytes(i & 0xBF for i in range(256))  # high byte below 0x40 (or 0xC0): finite, |x| < 2
blobs = {"model.norm.weight": ([1024], struct.pack("<1024H", *[0x3F80] * 1024))}
for i in range(16):
    for p in ("up_proj", "down_proj"):
        b = bytearray(rng.randbytes(2 << 20)); b[1::2] = bytes(b[1::2]).translate(clear)
        blobs["model.layers.%d.mlp.%s.weight" % (i, p)] = ([1024, 1024], bytes(b))
def write(path, names):
    header, off = {}, 0
    for n in names:
        shape, b = blobs[n]; header[n] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + len(b)]}; off += len(b)
    j = json.dumps(header).encode(); j += b" " * (-len(j) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(j)) + j); [f.write(blobs[n][1]) for n in names]
names = sorted(blobs)
shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
for d in ("model", "model2"):
    os.makedirs(os.path.join(root, d))
    json.dump({"architectures": ["LlamaForCausalLM"]}, open(os.path.join(root, d, "config.json"), "w"))
    json.dump({"model": {"vocab": {"a": 0}}}, open(os.path.join(root, d, "tokenizer.json"), "w"))
write(os.path.join(root, "model", "model.safetensors"), names)
write(os.path.join(root, "model2", shards[0]), names[:17]); write(os.path.join(root, "model2", shards[1]), names[17:])
json.dump({"metadata": {"total_size": sum(len(b) for _, b in blobs.values())},
           "weight_map": {n: shards[i >= 17] for i, n in enumerate(names)}},
          open(os.path.join(root, "model2", "model.safetensors.index.json"), "w"))
PY
sum_before="$(cat "$tmp/model"/* "$tmp/model2"/* | md5sum)"

# The two commands under test, OUT to be appended. quantize writes 2 shards (--max-shard-size),
# so a kill can land between the shards' commits, the index, config.json and the tokenizer
# copy; --force: the rerun (and every odd kill point) replaces an existing OUT. Arrays, not
# functions: a function run with & is a subshell, and SIGKILL to it leaves fp8q running.
cmd_q=("$fp8q" quantize "$tmp/model2" --layout ct-fp8 --threads 1 --max-shard-size 20000000 --force)
cmd_t=("$fp8q" quantize-tensors --scheme mx "$tmp/model/model.safetensors")
same_q() { diff -r "$tmp/ref-q" "$1" >/dev/null; }
same_t() { cmp -s "$tmp/ref-t.safetensors" "$1"; }
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# References: made twice (the second run, on a warm page cache, is the one timed) and equal,
# so that byte equality is the check after a kill; the quantize reference passes verify (every
# quantized weight decodes to IN within its SQNR bound, every kept tensor and file bit for bit,
# nothing else in OUT), and inspect reads the quantize-tensors one. Bytes equal to a verified
# reference are the strongest check: a partial or stale file differs.
check "reference quantize" 0 '' -- "${cmd_q[@]}" "$tmp/ref-q"
t0=$(ms_now) && check "reference quantize again" 0 '' -- "${cmd_q[@]}" "$tmp/ref-q2" && ms_q=$(($(ms_now) - t0))
expect "quantize is deterministic" same_q "$tmp/ref-q2"
expect "reference has 2 shards and the index" test -f "$tmp/ref-q/model-00002-of-00002.safetensors" -a -f "$tmp/ref-q/model.safetensors.index.json"
check "verify the reference" 0 '' -- "$fp8q" verify "$tmp/ref-q" --against "$tmp/model2"
expect "verify OK" grep -q 'verify: OK' "$tmp/out"
check "reference quantize-tensors" 0 '' -- "${cmd_t[@]}" "$tmp/ref-t.safetensors"
t0=$(ms_now) && check "reference quantize-tensors again" 0 '' -- "${cmd_t[@]}" "$tmp/ref-t2.safetensors" && ms_t=$(($(ms_now) - t0))
expect "quantize-tensors is deterministic" same_t "$tmp/ref-t2.safetensors"
check "inspect the quantize-tensors reference" 0 '' -- "$fp8q" inspect "$tmp/ref-t.safetensors"
expect "inspect: mx metadata" grep -q 'fp8q.scheme = mx' "$tmp/out"
rm -rf "$tmp/ref-q2" "$tmp/ref-t2.safetensors"

# 20 kill points a command, stratified over 0 .. 1.2 x the run's time (point i in
# [0.06 i, 0.06 (i + 1)), placed by the seeded generator): the very start, the write, the
# commit and past the end are all hit.
mapfile -t fracs < <("$py" -c 'import random, sys; r = random.Random(int(sys.argv[1]))
for _ in range(2):
    for i in range(20): print("%.4f" % (1.2 * (i + r.random()) / 20))' "$seed")

# kill_points NAME CMD SAME OUT MS FRACS...: each kill, then the rerun (CMD names an array;
# MS: one run's time, then each rerun's, so that a change of load is followed). OUT is alone
# in its folder, so anything else there is what a killed run left. Even points start with no
# OUT, odd ones with the complete OUT of the previous rerun (replaced: --force, or the rename).
# Where the kill landed: before the write (OUT as it was, nothing left), during it (OUT as it
# was or moved aside, staging/temporary files left), after the rename (a new OUT), or the run
# had exited.
kill_points() {
  local name="$1" same="$3" out="$4" ms="$5" i=0 frac delay rc ino left was
  local -n cmd="$2"
  shift 5
  local dir before=0 during=0 after=0 exited=0 temps=0 t0 times="$ms"
  dir="$(dirname "$out")"
  for frac in "$@"; do
    if [ $((i % 2)) -eq 0 ]; then rm -rf "$out"; fi
    was="$(stat -c %i "$out" 2>/dev/null || echo none)"
    delay="$(awk -v f="$frac" -v ms="$ms" 'BEGIN { printf "%.4f", f * ms / 1000 }')"
    "${cmd[@]}" "$out" >"$tmp/kill-out" 2>"$tmp/kill-err" &
    bg=$!  # fp8q itself: a simple command is exec'ed in the forked child
    sleep "$delay"
    kill -KILL "$bg" 2>/dev/null
    wait "$bg" 2>/dev/null
    rc=$?
    bg=""
    expect "$name kill $i: no fp8q left running" test -z "$(pgrep -f -- "$out")"
    ino="$(stat -c %i "$out" 2>/dev/null || echo none)"
    left="$(ls -A "$dir" | grep -vxF "$(basename "$out")" | tr '\n' ' ')"
    expect "$name kill $i: killed or exited 0 (got $rc: $(head -c 300 "$tmp/kill-err"))" test "$rc" -eq 137 -o "$rc" -eq 0
    if [ "$ino" != none ]; then
      expect "$name kill $i (+$delay s): OUT complete, the reference bytes" "$same" "$out"
    fi
    if [ "$rc" -eq 0 ]; then
      exited=$((exited + 1))
      expect "$name kill $i: an exited run leaves nothing beside OUT" test -z "$left"
    elif [ "$ino" != "$was" ] && [ "$ino" != none ]; then
      after=$((after + 1))
    elif [ -n "$left" ] || [ "$ino" != "$was" ]; then
      during=$((during + 1))
    else
      before=$((before + 1))
    fi
    [ -n "$left" ] && temps=$((temps + 1))
    echo "$name kill $i at +$delay s: exit $rc, OUT $([ "$ino" = none ] && echo absent || echo complete)${left:+, left: $left}"
    # the same command again, nothing removed: succeeds with the reference bytes
    t0=$(ms_now)
    check "$name rerun after kill $i" 0 '' -- "${cmd[@]}" "$out"
    ms=$(($(ms_now) - t0)) && times+=" $ms"
    expect "$name rerun after kill $i: the reference bytes" "$same" "$out"
    rm -rf "${dir:?}"/.[!.]*  # this kill's leftovers (a killed run cannot remove them), counted above
    i=$((i + 1))
  done
  times="$(tr ' ' '\n' <<<"$times" | sort -n | sed -n '1p;$p' | paste -sd-)"  # fastest-slowest
  echo "$name: $((before + during + after + exited)) kills (runs $times ms): $before before the write, $during" \
       "during it, $after after the rename, $exited after the exit; $temps left temporary files"
}
mkdir "$tmp/kq" "$tmp/kt"
kill_points quantize cmd_q same_q "$tmp/kq/q" "$ms_q" "${fracs[@]:0:20}"
kill_points quantize-tensors cmd_t same_t "$tmp/kt/x.safetensors" "$ms_t" "${fracs[@]:20:20}"
check "verify the last rerun" 0 '' -- "$fp8q" verify "$tmp/kq/q" --against "$tmp/model2"

# Full disk: a 1 MiB tmpfs holds the staging directory but not the output. The Writer's
# fallocate fails at once (ENOSPC); a second model whose weights fit but whose tokenizer.json
# does not fails in the copy after them. Each: exit 2, OUT named, nothing left on the tmpfs.
if [ "$(id -u)" -eq 0 ] && mkdir "$full" && mount -t tmpfs -o size=1m fp8q-full "$full" 2>/dev/null; then
  check "full disk: quantize" 2 "output directory $full/q: .*No space left on device" -- \
    "$fp8q" quantize "$tmp/model" "$full/q" --layout ct-fp8
  echo "full disk, quantize: $(tail -1 "$tmp/err")"
  expect "full disk: quantize left nothing" test -z "$(ls -A "$full")"
  check "full disk: quantize-tensors" 2 "$full/x\.safetensors: .*No space left on device" -- \
    "$fp8q" quantize-tensors "$tmp/model/model.safetensors" "$full/x.safetensors" --scheme mx
  echo "full disk, quantize-tensors: $(tail -1 "$tmp/err")"
  expect "full disk: quantize-tensors left nothing" test -z "$(ls -A "$full")"
  mkdir "$tmp/small"
  cp "$tmp/model/config.json" "$tmp/small/"
  head -c $((2 << 20)) /dev/zero | tr '\0' ' ' >"$tmp/small/tokenizer.json"  # 2 MiB: past the 1 MiB
  "$py" - "$tmp/small/model.safetensors" <<'PY'
import json, struct, sys
j = json.dumps({"model.layers.0.mlp.up_proj.weight": {"dtype": "BF16", "shape": [256, 256], "data_offsets": [0, 131072]}}).encode()
j += b" " * (-len(j) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(j)) + j + struct.pack("<65536H", *[0x3C00 + i % 256 for i in range(65536)]))
PY
  check "full disk after the weights: quantize" 2 "output directory $full/q: .*No space left on device" -- \
    "$fp8q" quantize "$tmp/small" "$full/q" --layout ct-fp8
  echo "full disk after the weights, quantize: $(tail -1 "$tmp/err")"
  expect "full disk after the weights: nothing left" test -z "$(ls -A "$full")"
  umount "$full"
else
  echo "skipped: full disk needs root"
fi

expect "input unchanged" test "$(cat "$tmp/model"/* "$tmp/model2"/* | md5sum)" = "$sum_before"
echo "kill writer: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
