#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# roce-cross.sh: two rsoft RoCE devices of one host reach each other by
# GID. The core resolves a destination MAC through the IP stack before a QP
# or AH may use a RoCE v2 GID, which it cannot do between two local
# netdevs; a RoCE v1 link-local GID needs no IP stack, so the stock
# pingpongs cross devices on GID index 0 (fe80::, RoCE v1) of each, and so
# does roce/cross.c. Needs rsoft.ko loaded and no link yet; leaves none.
set -u
T=60
work=$(mktemp -d /tmp/roce-cross.XXXXXX)

TAP_PREFIX="rsoft: "
. "$(dirname "$0")/tap.sh"

ip link set eth0 up
ip link set dummy0 up
rdma link add rsoft_x0 type rsoft netdev eth0 &&
	rdma link add rsoft_x1 type rsoft netdev dummy0 ||
	fail "cross-device: two links"
# The core fills the GID tables from a work item: wait for the v1 entries.
v1() { [[ $(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/0" 2>/dev/null) == "IB/RoCE v1" ]]; }
for _ in $(seq 50); do
	v1 rsoft_x0 && v1 rsoft_x1 && break
	nap 0.2
done

# cross NAME TOOL ARGS...: the server on rsoft_x0, the client on rsoft_x1.
cross() {
	local name=$1 port=7490
	shift
	timeout -k 5 $T "$@" -d rsoft_x0 -g 0 -p $port >"$work/server" 2>&1 &
	local srv=$!
	for _ in {1..100}; do
		tcp_listening $port && break
		nap 0.1
	done
	if timeout -k 5 $T "$@" -d rsoft_x1 -g 0 -p $port localhost >"$work/client" 2>&1 &&
		wait $srv && grep -q 'iters in' "$work/server"; then
		pass "cross-device: $name (rsoft_x0 <-> rsoft_x1, RoCE v1 GIDs)"
	else
		fail "cross-device: $name (rsoft_x0 <-> rsoft_x1, RoCE v1 GIDs)"
		sed 's/^/# server: /' "$work/server"
		sed 's/^/# client: /' "$work/client"
	fi
	wait $srv 2>/dev/null
}
cross "ibv_rc_pingpong -s 4096 -n 100 -c" ibv_rc_pingpong -s 4096 -n 100 -c
cross "ibv_ud_pingpong -s 512 -n 100 -c" ibv_ud_pingpong -s 512 -n 100 -c

# An RC sender waiting for the other device's SRQ is resumed by its post.
ROCE_DEV=rsoft_x0 ROCE_DEV2=rsoft_x1 timeout -k 5 $T "$(dirname "$0")/build/roce/cross"

rdma link delete rsoft_x1
rdma link delete rsoft_x0
rm -rf "$work"
exit 0
