#!/usr/bin/env bash
# Tuning run for update_logits' stream form: its stats warps (the block's other working
# warps write) swept with ftbench --logits-stats, the form forced, for each dtype, mode and
# row count given; one CSV block, then a table of device µs per stats count.
#   bash bench/logits_tune.sh                       defaults below
#   FT_LT_STATS="8 9 10 11" FT_LT_DTYPES="fp32" FT_LT_MODES="log_softmax" FT_LT_BATCHES="64 256" \
#   FT_LT_VOCAB=128256 bash bench/logits_tune.sh
# Needs build/gpu/bench/ftbench (cmake --preset gpu; or bench/prebuild.sh ftbench).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=build/gpu/bench/ftbench
[ -x "$bin" ] || { echo "logits_tune: $bin not built" >&2; exit 2; }
stats=${FT_LT_STATS:-7 8 9 10 11 12}
out=${OUT:-build}/logits_tune.csv
first=1
for dt in ${FT_LT_DTYPES:-fp32 fp16 bf16}; do
  for mode in ${FT_LT_MODES:-log_softmax softmax}; do
    for b in ${FT_LT_BATCHES:-64}; do
      for s in $stats; do
        line=$("$bin" update_logits --dtype "$dt" --batch "$b" --vocab "${FT_LT_VOCAB:-128256}" --mode "$mode" \
               --logits-form stream --logits-stats "$s" --csv) || { echo "logits_tune: ftbench failed" >&2; exit 1; }
        if [ $first -eq 1 ]; then echo "$line" | head -1; first=0; fi
        echo "$line" | tail -n +2
      done
    done
  done
done | tee "$out"
# device µs per (dtype, mode, shape) and stats count
python3 - "$out" <<'PY'
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
table, counts = {}, []
for r in rows:
    s = int(re.search(r"stats=(\d+)", r["variant"]).group(1))
    key = (r["dtype"], r["variant"].split()[0], r["shape"])
    table.setdefault(key, {})[s] = float(r["device_us"])
    counts.append(s) if s not in counts else None
print("| dtype | mode | shape | " + " | ".join(f"{s} stats" for s in counts) + " |")
print("|---|---|---|" + "---:|" * len(counts))
for (dt, mode, shape), v in table.items():
    best = min(v.values())
    cells = [(f"**{v[s]:.2f}**" if v[s] == best else f"{v[s]:.2f}") if s in v else "-" for s in counts]
    print(f"| {dt} | {mode} | {shape} | " + " | ".join(cells) + " |")
PY
