#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make fuzz`: a long campaign of the verbs fuzzer (selftests/fuzz) in the
# debug guest, then the kernel log checked.
#
#   make fuzz [SEED=first] [SEEDS=10] [OPS=20000] [THREADS=4]
#
# A failed run prints its seed and the command that replays it exactly.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RSOFT_TOP"

seed=${SEED:-$(date +%s)} seeds=${SEEDS:-10} ops=${OPS:-20000} threads=${THREADS:-4}
kdir=$(tools/module.sh) || die "module build failed"
make -s -C selftests KSRC="$(readlink -f "$kdir/source")" || die "selftest build failed"
log=$(mktemp "${TMPDIR:-/tmp}/rsoft-fuzz.XXXXXX")
trap 'rm -f "$log"' EXIT

say "fuzzing rsoft0: seeds $seed to $((seed + seeds - 1)), $ops ops each, then $threads threads"
start=$SECONDS
tools/vm.sh -k "$kdir" -t $((900 + (seeds + 1) * ops / 50)) -- \
	selftests/fuzz/campaign.sh "$seed" "$seeds" "$ops" "$threads" | tee "$log"
passed=$(grep -c '^ok ' "$log")
failed=$(grep -c '^not ok ' "$log")
# Every fuzzer run and both kernel-log checks must have reported.
missing=$((seeds + 3 - passed - failed))
((missing > 0)) && failed=$((failed + missing))
say "campaign took $((SECONDS - start)) s"
grep '^not ok - fuzz seed' "$log" | sed 's/^not ok - /failed: /'
echo "$passed passed, $failed failed"
((failed == 0))
