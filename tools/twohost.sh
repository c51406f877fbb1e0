#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# tools/twohost.sh [KDIR]: two guests of the debug kernel as two machines,
# joined by an Ethernet segment of their own (a QEMU socket network on
# their eth1), running selftests/twohost.sh: NVMe over RDMA from one to
# the other over the RoCEv2 wire. Prints both guests' TAP lines, and one
# more for each guest that did not finish.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RSOFT_TOP"

kdir=${1:-$("$RSOFT_TOP/tools/kernel.sh" debug)}
meet=$(mktemp -d "${TMPDIR:-/tmp}/rsoft-twohost.XXXXXX")
trap 'rm -rf "$meet"' EXIT
# Below the kernel's ephemeral ports (32768 on): a port that a client
# socket of an earlier run left in TIME_WAIT refuses the listen.
port=$((20000 + RANDOM % 12000))
guest() { # ROLE NETDEV
	mkdir -p "$meet/$1.vm"
	tools/vm.sh -k "$kdir" -t 900 -w "$2" -s "$meet" -o "$meet/$1.vm" -- \
		selftests/twohost.sh "$1" >"$meet/$1.out" 2>&1
}
# The listener first: the other QEMU connects once, when it starts.
guest target "listen:$port" &
t=$!
listening() { ss -Hltn "sport = :$port" | grep -q .; }
for _ in $(seq 100); do
	listening && break
	sleep 0.1
done
guest host "connect:$port"
wait $t
for g in target host; do
	grep -E '^(ok|not ok|#)' "$meet/$g.out"
	[[ -f $meet/$g.vm/status ]] || {
		echo "not ok - two hosts: the $g guest finished"
		tail -30 "$meet/$g.out" | sed 's/^/# /'
	}
done
