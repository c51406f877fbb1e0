#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: rsoft against rxe and siw and against the machine's limits,
# all measured in one guest of the benchmark kernel.
#
#   tools/bench.sh [OUTDIR]   (default Documentation/bench, or
#                             Documentation/bench/KVER beside it for a
#                             kernel other than 6.12)
#
# Builds the release kernel (once; cached like the debug one), rsoft.ko and
# the helpers of tools/bench/ against it, boots one guest that runs
# tools/bench/guest.sh, and turns its figures into OUTDIR/bench.txt (also
# printed), bench.csv and bench.svg; the guest's figures are kept in
# OUTDIR/bench.log.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

default=$RSOFT_TOP/Documentation/bench
[[ $KVER == 6.12 ]] || default+=/$KVER
out=$(realpath -m "${1:-$default}")
build=$RSOFT_TOP/tools/bench/build
start=$SECONDS

"$RSOFT_TOP/tools/deps.sh"
kdir=$("$RSOFT_TOP/tools/kernel.sh" release)
KDIR=$kdir "$RSOFT_TOP/tools/module.sh" >/dev/null

say "building the benchmark helpers against $kdir"
mkdir -p "$build" "$out"
cc -O2 -Wall -o "$build/limits" "$RSOFT_TOP/tools/bench/limits.c"
# A clean first: the module is tiny, and its objects of another kernel
# (the debug one) must not be reused.
module_vars "$kdir"
kmod=(make -s -C "$kdir" M="$RSOFT_TOP/tools/bench/kmod" "${MODULE_VARS[@]}")
"${kmod[@]}" clean >&2
"${kmod[@]}" modules >&2

# The guest's console shows progress; its figures go to the log. (Its
# bound is generous: on a host shared with other guests, the rounds and
# the wire rows take over 20 minutes.)
say "running the benchmarks in the guest (about 15 minutes)"
log=$build/guest.log
cd "$RSOFT_TOP"
rc=0
"$RSOFT_TOP/tools/vm.sh" -k "$kdir" -t 3600 -- tools/bench/guest.sh | tee "$log" || rc=$?
((rc == 0)) || die "the benchmark guest failed (status $rc); see $log"
# The kernel-side figures again as instruction counts, which no busy host
# moves (a minute or two; without them the table says "-").
say "counting the instructions of a SEND (a guest under -icount)"
"$RSOFT_TOP/tools/vm.sh" -i -k "$kdir" -t 900 -- tools/bench/icount.sh | tee -a "$log" ||
	say "the instruction count failed; its rows stay empty"
grep -E '^(bench:|# )' "$log" > "$out/bench.log"

accel=tcg
[[ $(cat "$RSOFT_CACHE/kvm-$(uname -r)" 2>/dev/null) == kvm ]] && accel=kvm
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
machine="2-vCPU QEMU guest ($accel), host: $(nproc) x $cpu"
python3 "$RSOFT_TOP/tools/bench/report.py" "$out/bench.log" "$out" \
	"$(date -u '+%Y-%m-%d %H:%M UTC')" "$machine"
say "make bench took $((SECONDS - start)) s; table, CSV and chart in $out"
