#!/usr/bin/env bash
# Builds programs for the GPU machine here (preset gpu: sm_90a), so that a call there only
# runs them: the GPU machine is x86-64 with CUDA 13, like this one. Prints the `carry`
# list for the device call (each program's path) and their total size (the call carries
# at most 64 MiB with the working tree).
#
#   bash bench/prebuild.sh ftbench test_decoding test_attention_fp16
#   then, on the GPU machine: FT_PREBUILT=1 FT_TESTS="test_decoding ..." bash bench/gpu_run.sh
#
#   FT_PRESET=sm80 bash bench/prebuild.sh test_norm ...   the same programs built for sm_80
#   only (build/sm80), for gpu_run.sh's FT_COMPAT pass
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: bench/prebuild.sh <target>..." >&2; exit 2; }
targets=()
for t in "$@"; do targets+=(--target "$t"); done
preset=${FT_PRESET:-gpu}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" "${targets[@]}"
paths=()
for t in "$@"; do
  if [ "$t" = ftbench ]; then paths+=("build/$preset/bench/ftbench"); else paths+=("build/$preset/tests/$t"); fi
done
du -ch "${paths[@]}" | tail -1
printf 'carry: ['
printf '"%s",' "${paths[@]}" | sed 's/,$//'
printf ']\n'
