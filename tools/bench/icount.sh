#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench's instruction counts, in a guest booted with tools/vm.sh -i
# (its clock advances a nanosecond per instruction): rsoft_pollcq once,
# its per-call times read as instructions. Unlike a time under TCG, which
# moves by 2x between runs on a shared host, a count changes only with the
# code, so it shows what a change to the module did to a SEND.
#
# Prints "bench: icount NAME VALUE insns" lines for tools/bench/report.py.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

seen=$(dmesg | wc -l)
if ! insmod "$here/kmod/rsoft_pollcq.ko"; then
	echo "# rsoft_pollcq failed"
	exit 1
fi
rmmod rsoft_pollcq
figures=$(dmesg | tail -n +$((seen + 1)) |
	sed -n 's/.*rsoft_pollcq: bench \(post_[a-z]*_per_wr\|poll_cq_[a-z0-9_]*\) \([0-9.]*\) ns$/bench: icount \1 \2 insns/p')
if [[ -z $figures ]]; then
	echo "# rsoft_pollcq printed no figure"
	exit 1
fi
echo "$figures"
