#!/usr/bin/env bash
# Nsight Compute profiles of ftbench runs on the GPU machine: for each kernel of each
# command, speed of light, occupancy, launch, warp-state and memory sections (printed),
# and the SASS instructions with the most stall samples (top 25 per kernel).
#
#   bash bench/profile.sh 'topk --dtype fp32 --batch 64 --vocab 32000 --k 1' 'update_logits ...'
#
# Builds ftbench (preset gpu) if needed. Results in $OUT (default build/profile-out):
# profile.txt (sections), hot.txt (hot SASS lines). FT_NCU_KERNELS: kernel-name regex
# (default ^ft_, the library's kernels). ncu locks the clocks to base: its durations run
# longer than ftbench's; compare ncu figures with ncu figures. FT_PROFILE_BIN: an ftbench
# already built (bench/attn_tune.sh's build/tune/<n>/ftbench, say), used as it is.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/profile-out}
mkdir -p "$OUT" build/profile
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
BIN=${FT_PROFILE_BIN:-build/gpu/bench/ftbench}
if [ -z "${FT_PROFILE_BIN:-}" ] && ! { cmake --preset gpu && cmake --build --preset gpu --target ftbench; } \
     >build/profile/build.log 2>&1; then
  tail -40 build/profile/build.log
  exit 1
fi
regex=${FT_NCU_KERNELS:-^ft_}
: >"$OUT/profile.txt"
: >"$OUT/hot.txt"
n=0
for cmd in "$@"; do
  n=$((n + 1))
  rep=build/profile/p$n
  echo "######## $cmd" | tee -a "$OUT/profile.txt" "$OUT/hot.txt"
  # shellcheck disable=SC2086
  ncu -f -o "$rep" -k "regex:$regex" --launch-skip 4 --launch-count 3 \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis --section SourceCounters \
      "$BIN" $cmd --iters 3 --warmup 2 >build/profile/ncu$n.log 2>&1 \
    || { tail -20 build/profile/ncu$n.log | tee -a "$OUT/profile.txt"; continue; }
  ncu -i "$rep.ncu-rep" --print-summary none >>"$OUT/profile.txt" 2>&1
  # per-instruction stall samples: the source page as CSV, SASS only, busiest lines first
  if ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >build/profile/src$n.csv 2>&1; then
    python3 - build/profile/src$n.csv >>"$OUT/hot.txt" <<'EOF'
import csv, sys
text = open(sys.argv[1], newline="").read()
blocks, cur = [], []
for line in text.splitlines():
    if line.startswith('"Address"') or line.startswith('"# Address"'):
        if cur:
            blocks.append(cur)
        cur = [line]
    elif cur:
        cur.append(line)
    elif line.startswith('"Kernel') or line.startswith("Kernel"):
        print(line[:200])
if cur:
    blocks.append(cur)
if not blocks:
    print("no source table found; first lines:")
    print("\n".join(text.splitlines()[:6])[:3000])
for b in blocks:
    r = list(csv.reader(b))
    head, body = r[0], r[1:]
    col = None
    for name in ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)", "Sampling Data (All)"):
        if name in head:
            col = head.index(name)
            break
    if col is None:
        print("columns:", head[:12])
        continue
    src = head.index("Source") if "Source" in head else 1
    tot = sum(float(x[col] or 0) for x in body if len(x) > col)
    print(f"-- {len(body)} SASS lines, {tot:.0f} stall samples")
    for x in sorted(body, key=lambda x: -float(x[col] or 0) if len(x) > col else 0)[:25]:
        print(f"{float(x[col] or 0) / max(tot, 1) * 100:5.1f}%  {x[0]}  {x[src]}")
EOF
  else
    head -5 build/profile/src$n.csv >>"$OUT/hot.txt"
  fi
done
echo "profiles: $OUT/profile.txt, hot lines: $OUT/hot.txt"
grep -E '^  ft_|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Eligible Warps|No Eligible' "$OUT/profile.txt" | head -150
