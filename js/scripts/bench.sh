#!/usr/bin/env bash
# The overhead bench (tripgate vs opossum 10 vs cockatiel 4) on Node 24.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$JS"
"$NODE24" bench/bench.js "$@"
