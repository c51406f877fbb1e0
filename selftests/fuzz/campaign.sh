#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# campaign.sh SEED SEEDS OPS THREADS: in the guest, with rsoft.ko loaded,
# runs the fuzzer for SEEDS seeds from SEED, OPS operations each, then once
# with THREADS threads, then checks the kernel log. TAP, one line a run.
set -u
here=$(dirname "$(readlink -f "$0")")
fuzz=$here/../build/fuzz/fuzz
seed=$1 seeds=$2 ops=$3 threads=$4

[[ -w /sys/kernel/debug/kmemleak ]] && echo clear > /sys/kernel/debug/kmemleak
for ((s = seed; s < seed + seeds; s++)); do
	"$fuzz" -s "$s" -n "$ops"
done
"$fuzz" -s "$((seed + seeds))" -n "$ops" -t "$threads" -l 2
"$here/../kernel-log.sh"
