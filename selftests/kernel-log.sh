#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The end of every guest run: two TAP lines, one for a kmemleak scan and
# one for the kernel log (WARN, BUG, Oops, KASAN, lockdep, RCU stalls).
kmemleak=/sys/kernel/debug/kmemleak

if [[ -w $kmemleak ]]; then
	sleep 6	# kmemleak ignores objects younger than 5 s
	echo scan > $kmemleak
	leaks=$(cat $kmemleak)
	if [[ -z $leaks ]]; then
		echo "ok - kmemleak: no leak"
	else
		echo "not ok - kmemleak: no leak"
		sed 's/^/# /' <<<"$leaks" | head -60
	fi
else
	echo "not ok - kmemleak: debugfs interface missing"
fi
# Lockdep, KASAN, DEBUG_LIST and RCU reports all start with one of these.
splat='WARNING:|BUG:|Oops|UBSAN:|KASAN:|INFO: |kmemleak: [0-9]+ new suspected|Call Trace|detected stall'
if ! dmesg | grep -Eq "$splat"; then
	echo "ok - dmesg: no WARN/BUG/Oops/KASAN/lockdep/kmemleak report"
else
	echo "not ok - dmesg: no WARN/BUG/Oops/KASAN/lockdep/kmemleak report"
	dmesg | grep -E -B20 -A40 "$splat" | head -200 | sed 's/^/# /'
fi
