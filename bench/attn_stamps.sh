#!/usr/bin/env bash
# Builds bench/attn_stamps.cu (per-block timelines of the sm_90 decode-attention kernels)
# against headers generated with FTGEN_ATTN_TUNE="STAMP=1" for one head size and dtype,
# into build/stamps/attn_stamps. Extra FTGEN_ATTN_TUNE knobs (bench/attn_tune.sh lists
# them) can follow, to see a plan's timeline:
#   bash bench/attn_stamps.sh 128 fp16 ["ANS=4,ATK=64"]
#   build/stamps/attn_stamps 8 32 8 4096 [splits] [-v]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/attn_stamps.sh <head size> <fp16|bf16|fp32> [knobs]" >&2; exit 2; }
d=$1; dt=$2; knobs=${3:-}
out=build/stamps
mkdir -p $out
python3 - "$d" "$dt" <<'PY' >$out/stamps.toml
import sys
text = open("gen/variants.toml").read()
head, rest = text.split("[attention]", 1)
tail = rest[rest.index("\n["):]
print(head + f'[attention]\nhead_sizes = [{sys.argv[1]}]\ndtypes = ["{sys.argv[2]}"]\n' + tail)
PY
FTGEN_ATTN_TUNE="STAMP=1${knobs:+,$knobs}" python3 gen/ftgen.py --manifest $out/stamps.toml --out $out/gen >/dev/null
nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -I$out/gen -DSTAMP_D=$d -DSTAMP_DT=$dt "-DSTAMP_HEADER=\"ft/attention_h${d}_$dt.cuh\"" bench/attn_stamps.cu -o $out/attn_stamps
echo "built $out/attn_stamps (h$d $dt${knobs:+, $knobs})"
