#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Where a kernel-side SEND's instructions go, in a guest booted with
# tools/vm.sh -i (rsoft.ko loaded, tools/bench/kmod built against its
# kernel, as make bench leaves it): perf samples the CPU clock, which
# under -icount counts instructions, while rsoft_pollcq posts and polls
# 0-byte SENDs, and prints the symbols that took the samples. The
# figures are shares: what rsoft_pollcq measures besides (memcpy, the
# ICRC) is left out. Samples taken with interrupts off land where they
# are turned on again, at a spin lock's unlock.
#
#   tools/vm.sh -i -k KDIR -t 900 -- tools/bench/profile.sh [ROUNDS]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-4}
data=/tmp/rsoft-profile.data
command -v perf >/dev/null || { echo "# no perf here (Debian: linux-perf)"; exit 1; }

echo -1 >/proc/sys/kernel/perf_event_paranoid
echo 0 >/proc/sys/kernel/kptr_restrict
# The most completions a run takes: more SENDs for the same set-up.
perf record -q -a -e cpu-clock -o "$data" -- sh -c "
	for _ in \$(seq $rounds); do
		insmod '$here/kmod/rsoft_pollcq.ko' nr=16384 && rmmod rsoft_pollcq
	done" || exit 1
perf report -i "$data" --stdio --sort dso,sym -n 2>/dev/null |
	grep -v -e '^#' -e '^$' -e memcpy -e crc32 | head -40
