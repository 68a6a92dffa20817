#!/usr/bin/env bash
# A long run of the property tests (test/fuzz.test.js): rounds of FUZZ_RUNS cases per
# property, each with a fresh seed, for MINUTES minutes (default 10). Prints one line per
# round; a failing round prints fast-check's report (seed, path, shrunk counterexample),
# which goes into test/fuzz-regressions.js once fixed.
#   bash scripts/fuzz.sh [MINUTES] [RUNS_PER_ROUND]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
minutes=${1:-10}
runs=${2:-50000}
end=$((SECONDS + minutes * 60))
round=0
total=0
failed=0
while [ $SECONDS -lt $end ]; do
  round=$((round + 1))
  seed=$(( (RANDOM << 15 | RANDOM) ))
  start=$SECONDS
  if out=$(FUZZ_RUNS=$runs FUZZ_SEED=$seed node --test test/fuzz.test.js 2>&1); then
    echo "round $round seed $seed: pass ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    echo "round $round seed $seed: FAIL"
    echo "$out" | grep -E "Counterexample|Got |seed:" -A6 || echo "$out" | tail -20
  fi
  total=$((total + 1))
done
echo "rounds $total, failed $failed, $runs runs per property per round (execute: $((runs / 4)))"
