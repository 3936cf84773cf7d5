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
#   FT_JOBS=8 ...               run up to 8 test processes and sanitizer runs at once (the
#                               long programs in parts: test-name filters, counts summed)
#   FT_SANITIZER_TIMEOUT=300 ... seconds each sanitizer run may take (default 150; with
#                               FT_JOBS=8 beside the attention tests, h128's runs took longer)
#   FT_BUILD_TARGETS='ftbench test_decoding' ... build only these targets (default: all)
#   FT_PREBUILT=1 ...           no build and no ctest: run the programs already in build/gpu
#                               (built on another x86-64 machine with the same CUDA major
#                               by `bash bench/prebuild.sh`, carried to the GPU machine)
#   FT_COMPAT=1 ...             also run the test programs built for sm_80 only (preset sm80,
#                               build/sm80: the driver compiles their PTX for this device, the
#                               sm_90 kernels are empty there and the launchers must not take
#                               them); built here unless FT_PREBUILT (then FT_PRESET=sm80
#                               bash bench/prebuild.sh ...); FT_TESTS filters them too, and
#                               their lines in the summary start with sm80/
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
  ls -l build/gpu/tests/test_* build/gpu/bench/ftbench ${FT_COMPAT:+build/sm80/tests/test_*} 2>/dev/null | awk '{print $5, $NF}'
elif ! { echo "== build (preset gpu)" && cmake --preset gpu && cmake --build --preset gpu "${targets[@]}"; } \
     >"$LOG/build.log" 2>&1; then
  tail -50 "$LOG/build.log"
  cp "$LOG/build.log" "$OUT/logs.txt"
  echo "BUILD FAILED"
  exit 1
fi

if [ -n "${FT_COMPAT:-}" ] && [ -z "${FT_PREBUILT:-}" ] &&
   ! { echo "== build (preset sm80)" && cmake --preset sm80 && cmake --build --preset sm80 "${targets[@]}"; } \
     >"$LOG/build_sm80.log" 2>&1; then
  tail -50 "$LOG/build_sm80.log"
  cp "$LOG/build_sm80.log" "$OUT/logs.txt"
  echo "BUILD FAILED (preset sm80)"
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
# With FT_JOBS > 1 the long programs run in parts (test-name filters that partition their
# tests, one process each; their counts are summed below), longest first.
parts() {
  case $1 in
    test_attention_fp16 | test_attention_bf16 | test_attention_fp32) echo "h256_ h192_ h160_ h128_ h112_ h96_ h80_ h64_ h48_ h32_" ;;
    test_decoding) echo "_k1_ _k2_ _k4_ _k8_ _k16_ _k32_ _k64_ update_logits topp beam_search embedding search_kernels" ;;
    *) echo "-" ;;
  esac
}
: >"$LOG/tests.txt"
names=()
programs=(build/gpu/tests/test_attention_* build/gpu/tests/test_*)
[ -n "${FT_COMPAT:-}" ] && programs+=(build/sm80/tests/test_attention_* build/sm80/tests/test_*)
for t in "${programs[@]}"; do
  [ -x "$t" ] || continue
  base=$(basename "$t")
  case $t in build/sm80/*) name="sm80/$base" ;; *) name=$base ;; esac
  if { [ -n "${FT_TESTS:-}" ] && ! printf ' %s ' "$FT_TESTS" | grep -q " $base "; } ||
     printf ' %s ' "${names[@]}" | grep -qF " $name "; then
    continue
  fi
  names+=("$name")
  filters=$( [ "$jobs_max" -gt 1 ] && parts "$base" || echo - )
  for f in $filters; do
    key="${name//\//_}@$f"
    slot
    if [ "$f" = - ]; then
      ( "$t" >"$LOG/$key.log" 2>&1; echo $? >"$LOG/$key.rc" ) &
    else
      ( "$t" "$f" >"$LOG/$key.log" 2>&1; echo $? >"$LOG/$key.rc" ) &
    fi
  done
done

sans=()
if [ -z "${FT_SKIP_SANITIZER:-}" ] && command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer (memcheck, racecheck) on the GPU tests"
  n=0
  # a subset of each program (its test-name filters) keeps the sanitizer's run time bounded
  for spec in "test_norm layernorm_fp16 add_bias_act_fp16 add_bias_residual_fp16 rmsnorm_fp32" "test_attention_fp16 h128" "test_attention_fp16 h64" "test_attention_fp16 h32" \
              "test_attention_bf16 packed_attention_h64" "test_attention_fp32 h80" "test_encoder masked_softmax_fp16 add_qkv_bias_transpose_fp16 remove_rebuild_padding_fp16" \
              "test_layers bert_layer_fp16" "test_decoding topk_k4_fp16 search_kernels topp_cluster_fp16" \
              "test_decoding beam_search_fp32 embedding_fp16 update_logits_fp16 update_logits_stream_fp32" \
              "test_decoding topp_sorted_small_bf16" "test_llama" "test_layers llama_layer_fp16" \
              "test_batching batching_insert batching_fill batching_append batching_qkt batching_softmax batching_greedy" \
              "test_batching batching_inferencer"; do
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
  # the program's parts: counts summed, the worst exit (0 < 77, all skipped, < a failure)
  p=0 f=0 s=0 worst=0 n=0
  for log in "$LOG/${name//\//_}@"*.log; do
    rc=$(cat "${log%.log}.rc" 2>/dev/null || echo 99)
    grep -E '^FAIL' -A3 "$log"
    read -r a b c < <(tail -1 "$log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p')
    [ -n "$a" ] || { a=0 b=1 c=0; echo "$log: no counts (exit $rc)"; tail -3 "$log"; }
    p=$((p + a)) f=$((f + b)) s=$((s + c)) n=$((n + 1))
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then worst=$rc; elif [ "$rc" -eq 77 ] && [ "$worst" -eq 0 ]; then worst=77; fi
  done
  [ "$p" -gt 0 ] && [ "$worst" -eq 77 ] && worst=0
  [ $((p + f + s)) -gt 0 ] || { worst=98; echo "$name: no test ran"; } # parts that matched nothing
  printf '%-26s %d passed, %d failed, %d skipped (%d process%s, exit %d)\n' "$name" "$p" "$f" "$s" "$n" \
    "$([ "$n" -eq 1 ] && echo "" || echo es)" "$worst" >>"$LOG/tests.txt"
  [ "$worst" -eq 0 ] || status=1
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
