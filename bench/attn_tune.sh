#!/usr/bin/env bash
# Tuning run for the attention kernels' plan constants: generates fp16 h64/h80/h128 variants
# with each FTGEN_ATTN_TUNE setting into build/tune/<n>, builds ftbench against them and
# times the attention issue's shapes. Prints one CSV block per setting.
#   bash bench/attn_tune.sh "KU=4,VU=4" "KU=8,VU=8,MINB=2" ...
# Knobs (gen/ftgen.py, AttentionFamily.context): register kernel KU, VU (cache vectors in
# flight per thread), MINB, GQMINB (blocks per SM in __launch_bounds__); sm_90 kernel ANW,
# AGQNW (consumer warps for one head / a head group), ATK (steps per stage), ANS (stages;
# AGQNS for a head group alone), AMINB, AGQMINB; tensor-core head-group kernel MNW (consumer
# warps), MR / MRW (rows per copy of the r4 / r8 forms), MTM (0: no tensor-map form), MTB
# (rows of its boxes), MNS (stages), MMINB, MOCC (0: no
# shared-memory padding that holds the forms to MMINB blocks per SM); APF (0: no L2
# prefetch of a split's first tile before the dependent-launch wait); STAMP=1 (per-block
# timestamps, for bench/attn_stamps.sh). "" is the shipped plan.
set -uo pipefail
cd "$(dirname "$0")/.."
# the shipped manifest with the attention family cut down to the tuned variants
python3 - <<'EOF' >build/tune.toml
import re
text = open("gen/variants.toml").read()
head, rest = text.split("[attention]", 1)
tail = rest[rest.index("\n["):]
print(head + '[attention]\nhead_sizes = [64, 80, 128]\ndtypes = ["fp16"]\n' + tail)
EOF
i=0
for cfg in "$@"; do
  i=$((i + 1))
  mkdir -p build/tune/$i
  FTGEN_ATTN_TUNE=$cfg python3 gen/ftgen.py --manifest build/tune.toml --out build/tune/$i >/dev/null
  (nvcc -O3 -std=c++17 -arch=sm_90 -Iinclude -Ibuild/tune/$i -Itests -Iexamples -Xptxas -v bench/ftbench.cu \
     tests/ref/ref_common.c -lcublas -lcublasLt -lineinfo -o build/tune/$i/ftbench >build/tune/$i/build.log 2>&1 || echo "build $i failed") &
done
wait
i=0
for cfg in "$@"; do
  i=$((i + 1))
  for k in ft_attn_decode_h128_fp16_g1 ft_attn_async_h128_fp16_g1 ft_attn_async_h128_fp16_g4 ft_attn_mma_r4_h128_fp16 \
           ft_attn_mma_r8_h128_fp16; do
    echo "### $cfg $k: $(grep -A2 "$k" build/tune/$i/build.log | grep -oE 'Used [0-9]+ registers|[0-9]+ bytes spill stores' | tr '\n' ' ')"
  done
  while read -r args; do
    build/tune/$i/ftbench $args --csv | tail -1 | cut -d, -f2,4,5,6,9,10
  done <<'SHAPES'
self_attention --batch 1 --heads 32 --head-size 128 --len 4096
self_attention --batch 1 --heads 32 --head-size 128 --len 4096 --splits 4
self_attention --batch 1 --heads 32 --head-size 128 --len 4096 --splits 12
self_attention --batch 1 --heads 32 --head-size 128 --len 4096 --splits 16
self_attention --batch 8 --heads 32 --head-size 128 --len 4096
self_attention --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096
self_attention --batch 8 --heads 32 --kv-heads 8 --head-size 128 --len 4096 --splits 4
self_attention --batch 8 --heads 32 --kv-heads 1 --head-size 128 --len 4096
self_attention --batch 64 --heads 12 --head-size 64 --len 1024
self_attention --batch 64 --heads 32 --head-size 128 --len 2048
self_attention --batch 256 --heads 8 --head-size 64 --len 512
self_attention --batch 16 --heads 32 --head-size 80 --len 2048
SHAPES
done
