#!/usr/bin/env bash
# Runs each fuzz target and prints one line per target: executions, executions per second,
# corpus size and findings (crash / leak / timeout artifacts). Called by `make fuzz` and
# `make fuzz-smoke`:
#   fuzz/run.sh BUDGET BUILD_DIR WORK_DIR TARGET...
# BUDGET is either SECONDS (open-ended: `make fuzz`, a random seed, the corpus grows in
# WORK_DIR/corpus/<target> across runs) or `runs:N:SEED` (reproducible: `make fuzz-smoke`, in
# `make test`): every checked-in seed, then exactly N mutations drawn from the fixed SEED,
# starting from the checked-in corpus alone — the same inputs on every machine and every run,
# so CI can never fail on a random draw. New inputs of a reproducible run go to a scratch
# directory that is emptied first.
# The checked-in seeds (fuzz/corpus/<target>) are read, never written; logs go to
# WORK_DIR/logs, findings to WORK_DIR/artifacts/<target>.
set -euo pipefail

budget=$1 build_dir=$2 work=$3
shift 3
case "$budget" in
    runs:*:*) IFS=: read -r _ runs seed <<<"$budget"; limit=(-runs="$runs" -seed="$seed"); label="$runs runs, seed $seed"; fresh=1 ;;
    *) limit=(-max_total_time="$budget"); label="${budget}s"; fresh=0 ;;
esac
cd "$(dirname "$0")"
cargo_fuzz=(cargo "+${FUZZ_TOOLCHAIN:-nightly}" fuzz)

if ! "${cargo_fuzz[@]}" --version >/dev/null 2>&1; then
    echo "fuzz: needs cargo-fuzz and a nightly toolchain (.ci/run installs both:" >&2
    echo "      rustup toolchain install nightly --profile minimal; cargo install cargo-fuzz --version 0.13.1 --locked)" >&2
    exit 1
fi

"${cargo_fuzz[@]}" build --target-dir "$build_dir"

mkdir -p "$work/logs"
summary=()
failed=()
for t in "$@"; do
    rm -rf "$work/artifacts/$t"
    corpus="$work/corpus/$t"
    if [ "$fresh" = 1 ]; then corpus="$work/smoke-corpus/$t"; rm -rf "$corpus"; fi
    mkdir -p "$corpus" "$work/artifacts/$t"
    log="$work/logs/$t.log"
    echo "== fuzz $t: $label"
    # -timeout: one input taking 10 s is a finding (a hang), not a slow run.
    status=0
    "${cargo_fuzz[@]}" run --target-dir "$build_dir" "$t" "$corpus" "corpus/$t" -- \
        "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -dict=fuzz.dict \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/" >"$log" 2>&1 || status=$?
    # libFuzzer's last status line ("#N DONE cov: … exec/s: R …") and its final stats.
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corp=$(sed -n 's/^#[0-9]*[[:space:]]*DONE .*corp: \([0-9]*\/[0-9A-Za-z]*\).*/\1/p' "$log" | tail -n 1)
    # Artifacts in our directory, or wherever libFuzzer said it wrote them.
    findings=$(find "$work/artifacts/$t" -type f | wc -l)
    written=$(grep -c 'Test unit written to' "$log" || true)
    if [ "$written" -gt "$findings" ]; then findings=$written; fi
    line=$(printf '%-20s execs %10s  exec/s %7s  corpus %-12s findings %s' "$t" "${execs:-?}" "${rate:-?}" "${corp:-?}" "$findings")
    summary+=("$line")
    echo "$line"
    if [ "$status" != 0 ] || [ "$findings" != 0 ]; then
        failed+=("$t")
        grep -E "panicked at|ERROR: |SUMMARY:|Test unit written|^[a-z].*: " "$log" | grep -v '^stat::' | head -n 20 >&2 || true
        echo "fuzz $t: exit status $status, $findings finding(s) in $work/artifacts/$t (reproduce: cd fuzz && cargo +nightly fuzz run $t <file>); log $log" >&2
    fi
done

echo "== fuzz summary ($label per target)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz: failed or found something: ${failed[*]}" >&2
    exit 1
fi
