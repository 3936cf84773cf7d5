#!/usr/bin/env bash
# One call on a GPU machine: build for sm_90, run every test (GPU tests included), check
# the kernels with compute-sanitizer, read the load/store widths in the SASS, run the
# ftbench suite and the PyTorch side-by-side, and print a short summary last.
#
#   bash bench/gpu_run.sh       results in $OUT (default build/gpu-out): summary.txt,
#                               logs.txt, ours.csv, torch.csv, results.md, sass_summary.txt;
#                               raw logs in build/gpu-logs
#   FT_SKIP_BENCH=1 ...         tests only
#   FT_SKIP_SANITIZER=1 ...     no compute-sanitizer pass
#   FT_TESTS="test_decoding test_layers" ...   only these test programs (and no ctest pass)
#   FT_SUITE_GREP='topk|topp' ...               only the suite lines matching the regex
#   FT_SANITIZE_ONLY='test_decoding' ...        only the sanitizer specs of these programs
#   FT_JOBS=8 ...               run up to 8 test programs and sanitizer runs at once
#   FT_SANITIZER_TIMEOUT=300 ... seconds each sanitizer run may take (default 150; with
#                               FT_JOBS=8 beside the attention tests, h128's runs took longer)
#   FT_BUILD_TARGETS='ftbench test_decoding' ... build only these targets (default: all)
#   FT_PREBUILT=1 ...           no build and no ctest: run the programs already in build/gpu
#                               (built on another x86-64 machine with the same CUDA major
#                               by `bash bench/prebuild.sh`, carried to the GPU machine)
# (test_decoding alone takes about six minutes on the H100 machine: FT_JOBS or the filters
# keep a call within its time)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-build/gpu-out}
LOG=build/gpu-logs
rm -rf "$LOG"
mkdir -p "$OUT" "$LOG"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PYTHONUNBUFFERED=1
status=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem --format=csv \
  | tee "$LOG/device.txt"

targets=()
for t in ${FT_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
if [ -n "${FT_PREBUILT:-}" ]; then
  echo "== build: prebuilt programs in build/gpu (FT_PREBUILT)"
  ls -l build/gpu/tests/test_* build/gpu/bench/ftbench 2>/dev/null | awk '{print $5, $NF}'
elif ! { echo "== build (preset gpu)" && cmake --preset gpu && cmake --build --preset gpu "${targets[@]}"; } \
     >"$LOG/build.log" 2>&1; then
  tail -50 "$LOG/build.log"
  cp "$LOG/build.log" "$OUT/logs.txt"
  echo "BUILD FAILED"
  exit 1
fi

if [ -z "${FT_TESTS:-}" ] && [ -z "${FT_PREBUILT:-}" ]; then
  echo "== tests (ctest --preset gpu)"
  ctest --preset gpu >"$LOG/ctest.log" 2>&1 || status=1
  tail -22 "$LOG/ctest.log"
else
  : >"$LOG/ctest.log"
fi

# The harness programs again, directly, for their per-test lines and counts, then the
# sanitizer specs: FT_JOBS of them at a time (default 1, one after the other; the test
# programs are CPU-bound in their references and test_decoding alone takes ~6 minutes on
# the H100 machine, so FT_JOBS=8 lets one call run them all). Results are collected in a
# fixed order once all have ended.
jobs_max=${FT_JOBS:-1}
slot() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n 2>/dev/null || true; done
}
: >"$LOG/tests.txt"
names=()
for t in build/gpu/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  if [ -n "${FT_TESTS:-}" ] && ! printf ' %s ' "$FT_TESTS" | grep -q " $name "; then
    continue
  fi
  names+=("$name")
  slot
  ( "$t" >"$LOG/$name.log" 2>&1; echo $? >"$LOG/$name.rc" ) &
done

sans=()
if [ -z "${FT_SKIP_SANITIZER:-}" ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer (memcheck, racecheck) on the GPU tests"
  n=0
  # a subset of each program (its test-name filters) keeps the sanitizer's run time bounded
  for spec in "test_norm layernorm_fp16 add_bias_act_fp16" "test_attention_fp16 h128" "test_attention_fp16 h64" "test_attention_fp16 h32" \
              "test_attention_bf16 packed_attention_h64" "test_attention_fp32 h80" "test_encoder masked_softmax_fp16 add_qkv_bias_transpose_fp16 remove_rebuild_padding_fp16" \
              "test_layers bert_layer_fp16" "test_decoding topk_k4_fp16 search_kernels topp_cluster_fp16" \
              "test_decoding beam_search_fp32 embedding_fp16 update_logits_fp16 update_logits_stream_fp32"; do
    set -- $spec
    t=$1
    shift
    n=$((n + 1))
    if [ -n "${FT_SANITIZE_ONLY:-}" ] && ! printf ' %s ' "$FT_SANITIZE_ONLY" | grep -q " $t "; then
      continue
    fi
    for tool in memcheck racecheck; do
      key="${n}_${t}_$tool"
      sans+=("$key $t $tool")
      slot
      ( timeout "${FT_SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 3 "build/gpu/tests/$t" "$@" \
          >"$LOG/sanitizer_$key.log" 2>&1; echo $? >"$LOG/sanitizer_$key.rc" ) &
    done
  done
fi
wait

for name in "${names[@]}"; do
  rc=$(cat "$LOG/$name.rc" 2>/dev/null || echo 99)
  grep -E '^FAIL' -A3 "$LOG/$name.log"
  printf '%-26s %s (exit %d)\n' "$name" "$(tail -1 "$LOG/$name.log")" "$rc" >>"$LOG/tests.txt"
  [ "$rc" -eq 0 ] || status=1
done
if [ ${#sans[@]} -gt 0 ]; then
  : >"$LOG/sanitizer.txt"
  for entry in "${sans[@]}"; do
    set -- $entry
    rc=$(cat "$LOG/sanitizer_$1.rc" 2>/dev/null || echo 99)
    printf '%-20s %-10s exit %d: %s\n' "$2" "$3" "$rc" \
      "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed,' "$LOG/sanitizer_$1.log" | tr '\n' ' ')" >>"$LOG/sanitizer.txt"
    [ "$rc" -eq 0 ] || status=1
  done
fi

echo "== SASS: global load/store instructions per kernel"
if command -v cuobjdump >/dev/null; then
  cuobjdump -sass build/gpu/bench/ftbench >"$LOG/ftbench.sass" 2>&1
  awk '/Function :/ {fn=$3} /(LDG|STG)\./ {match($0, /(LDG|STG)\.[A-Z0-9.]+/); c[fn" "substr($0, RSTART, RLENGTH)]++}
       END {for (k in c) print k, c[k]}' "$LOG/ftbench.sass" | sort >"$OUT/sass_summary.txt"
  grep -E 'h128_fp16|norm_rows_fp16_w16|softmax_fp16_w16|enc_copy_fp16_w16' "$OUT/sass_summary.txt" | head -60
fi

if [ -z "${FT_SKIP_BENCH:-}" ]; then
  echo "== ftbench suite"
  if [ -n "${FT_SUITE_GREP:-}" ]; then
    first=1
    build/gpu/bench/ftbench --suite | grep -E "$FT_SUITE_GREP" | while read -r line; do
      # shellcheck disable=SC2086
      if [ $first -eq 1 ]; then build/gpu/bench/ftbench $line --csv; first=0
      else build/gpu/bench/ftbench $line --csv | tail -n +2; fi
    done | tee "$OUT/ours.csv" || status=1
  else
    build/gpu/bench/ftbench --csv | tee "$OUT/ours.csv" || status=1
  fi
  echo "== PyTorch side-by-side"
  if python3 bench/torch_bench.py "$OUT/ours.csv" >"$OUT/torch.csv" 2>"$LOG/torch.txt"; then
    python3 bench/summarize.py "$OUT/ours.csv" "$OUT/torch.csv" --date "$(date +%F)" >"$OUT/results.md"
  else
    tail -5 "$LOG/torch.txt"
    python3 bench/summarize.py "$OUT/ours.csv" --date "$(date +%F)" >"$OUT/results.md"
  fi
fi

for f in "$LOG"/*.log "$LOG"/*.txt; do
  echo "######## $f"
  cat "$f"
done >"$OUT/logs.txt" 2>/dev/null
{
  echo "================ summary"
  head -2 "$LOG/device.txt" | tail -1
  cat "$LOG/tests.txt"
  [ -f "$LOG/sanitizer.txt" ] && cat "$LOG/sanitizer.txt"
  grep -E 'tests passed|tests failed' "$LOG/ctest.log"
  [ -f "$OUT/results.md" ] && cat "$OUT/results.md"
  echo "overall: $([ $status -eq 0 ] && echo OK || echo FAILURES)"
} >"$OUT/summary.txt"
echo
cat "$OUT/summary.txt"
exit $status
