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
# One report is the kernel's own, not rsoft's: 7.x's NVMe target takes
# nvmet_config_sem in an rdma_cm handler (I/O queue connect) and destroys
# its listener's cm_id under it (port removal), on any RDMA device. It is
# set aside, named, and only when the whole report is that cycle.
known_nvmet='nvmet_config_sem.*handler_mutex|handler_mutex.*nvmet_config_sem'
log=$(dmesg | awk -v known="$known_nvmet" '
	/WARNING: possible circular locking dependency detected/ { inrep = 1; rep = "" }
	inrep { rep = rep $0 "\n"; if (/<\/TASK>/) { inrep = 0
		if (rep ~ /nvmet_config_sem/ && rep ~ /handler_mutex/ && rep !~ /rsoft/)
			print "rsoft-known: lockdep: nvmet_config_sem vs handler_mutex (nvmet)"
		else
			printf "%s", rep
	} next }
	{ print }
	END { if (inrep) printf "%s", rep }')
grep '^rsoft-known: ' <<<"$log" | sed 's/^rsoft-known: /# the kernel'"'"'s own report, set aside: /'
if ! grep -Eq "$splat" <<<"$log"; then
	echo "ok - dmesg: no WARN/BUG/Oops/KASAN/lockdep/kmemleak report"
else
	echo "not ok - dmesg: no WARN/BUG/Oops/KASAN/lockdep/kmemleak report"
	grep -E -B20 -A40 "$splat" <<<"$log" | head -200 | sed 's/^/# /'
fi
