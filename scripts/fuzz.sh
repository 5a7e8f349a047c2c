#!/usr/bin/env bash
# Runs every libFuzzer target of the `fuzz` preset for a bounded time each,
# starting from its checked-in corpus (fuzz/corpus/<name>/), under ASan+UBSan
# with leak detection. New inputs go to a scratch corpus under the build
# directory, so the checked-in seeds stay small; a crash, leak, sanitizer
# report or broken property leaves its input in <build>/artifacts/ and
# fails the script. Prints executions per target.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 20 s, all)
#
# Build first: cmake --preset fuzz && cmake --build --preset fuzz (coverage
# of the whole library, build/fuzz), or the fuzz-ci presets (the asan tree,
# build/asan; Note [Fuzzing in CI] in fuzz/CMakeLists.txt) with
# TENFERRO_FUZZ_BUILD=build/asan.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(subscripts instance_json npy program_builder einsum_planner)
fi
build="${TENFERRO_FUZZ_BUILD:-build/fuzz}"
mkdir -p "$build/artifacts" "$build/corpus"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/${t}_fuzzer"
  [[ -x "$bin" ]] || { echo "fuzz: $bin is not built" >&2; exit 2; }
  mkdir -p "$build/corpus/$t"
  log="$build/${t}.log"
  if "$bin" "$build/corpus/$t" "fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$build/artifacts/${t}-" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    tail -n 40 "$log" >&2
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "fuzz: $t: $result, ${execs:-?} executions in ${seconds}s"
done
exit $status
