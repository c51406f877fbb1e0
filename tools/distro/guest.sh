#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The test in tools/distro.sh's guest: Debian's stock 7.3 kernel, unmodified,
# with trixie's own rdma-core. rsoft.ko and the selftests were built in the
# trixie root against that kernel; nothing is loaded yet. One TAP line per
# check, as in selftests/run-guest.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/selftests/build
ip4=10.0.2.15	# QEMU user networking's guest address
dev=rsoft_eth0
T=120		# the bound of every single command
work=$(mktemp -d /tmp/distro.XXXXXX)

TAP_PREFIX="distro: " TAP_TIMEOUT=$T
. "$top/selftests/tap.sh"

# --- the stock RDMA core first, then rsoft.ko on top of it
for m in ib_core ib_uverbs rdma_cm; do
	check "modprobe $m (the stock module)" modprobe "$m"
done
mark=$(dmesg | wc -l)
taint0=$(cat /proc/sys/kernel/tainted)
check "insmod rsoft.ko devices=1 into the stock kernel" insmod "$top/rsoft.ko" devices=1
# An unsigned out-of-tree module taints the kernel with O and E, and says
# so; anything else in the log (a symbol the stock kernel lacks, another
# vermagic) or any other taint means it is not the stock kernel's module.
news=$(dmesg | tail -n +$((mark + 1)))
complaints=$(grep -E 'Unknown symbol|disagrees about version|version magic|taint|Invalid|rsoft.*(fail|error)' <<<"$news" |
	grep -vE 'loading out-of-tree module taints kernel|module verification failed: signature and/or required key missing - tainting kernel')
if [[ -z $complaints ]]; then
	pass "insmod: no complaint in the kernel log but out-of-tree and unsigned"
else
	fail "insmod: no complaint in the kernel log but out-of-tree and unsigned"
	sed 's/^/# /' <<<"$complaints"
fi
taint=$(cat /proc/sys/kernel/tainted)
# O (12): out-of-tree, E (13): unsigned
check "insmod: only the out-of-tree and unsigned taints (was $taint0, is $taint)" \
	test $(((taint & ~taint0) & ~(1 << 12 | 1 << 13))) = 0

# --- a RoCE link on eth0, seen by trixie's tools
ip addr add "$ip4/24" dev eth0
ip link set eth0 up
check "rdma link add $dev type rsoft netdev eth0" timeout $T rdma link add "$dev" type rsoft netdev eth0
# The core fills the GID table from a work item.
for _ in $(seq 100); do
	info=$(ibv_devinfo -v -d "$dev" 2>&1)
	grep -q "::ffff:$ip4, RoCE v2" <<<"$info" && break
	sleep 0.2
done
gidx=$(sed -n "s/.*GID\[ *\([0-9]*\)\]:.*::ffff:${ip4//./\\.}, RoCE v2$/\1/p" <<<"$info")
if grep -Eq 'link_layer:\s+Ethernet' <<<"$info" && grep -Eq 'state:\s+PORT_ACTIVE' <<<"$info" &&
	[[ -n $gidx ]]; then
	pass "ibv_devinfo -v -d $dev: Ethernet, active, RoCE v2 GID of $ip4 at index $gidx"
else
	fail "ibv_devinfo -v -d $dev: Ethernet, active, RoCE v2 GID of $ip4"
	sed 's/^/# /' <<<"$info"
	gidx=1
fi

# --- the stock pingpongs over the link's GID. pingpong.sh opens rsoft0
# (-d rsoft0 first on the command line): the tools keep the last -d.
"$top/selftests/pingpong.sh" "distro: ibv_rc_pingpong -g $gidx -s 4096 -n 200 -c ($dev)" \
	ibv_rc_pingpong -d "$dev" -g "$gidx" -s 4096 -n 200 -c
"$top/selftests/pingpong.sh" "distro: ibv_ud_pingpong -g $gidx -s 512 -n 200 -c ($dev)" \
	ibv_ud_pingpong -d "$dev" -g "$gidx" -s 512 -n 200 -c

# --- rdma_cm users: the server srv[] until its rdma_cm ID listens on
# PORT, then the client cli[]; both must exit 0 and CHECK pass on the
# client's output.
cm_pair() { # NAME PORT CHECK
	local name=$1 port=$2 chk=$3 s crc=0 src=0
	timeout -k 5 $T "${srv[@]}" >"$work/server" 2>&1 &
	s=$!
	for _ in $(seq 300); do
		kill -0 $s 2>/dev/null || break
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr [^ ]*:$port " && break
		sleep 0.2
	done
	timeout -k 5 $T "${cli[@]}" >"$work/client" 2>&1 || crc=$?
	wait $s || src=$?
	if ((crc == 0 && src == 0)) && "$chk" "$work/client"; then
		pass "$name"
	else
		fail "$name (client $crc, server $src)"
		sed 's/^/# client: /' "$work/client" | tail -20
		sed 's/^/# server: /' "$work/server" | tail -20
	fi
}
rping_100() { test "$(grep -c '^ping data: rdma-ping-' "$1")" = 100; }
srv=(rping -s -a "$ip4" -p 7471 -C 100)
cli=(rping -c -a "$ip4" -p 7471 -C 100 -v)
cm_pair "rping -C 100 -v" 7471 rping_100
perf_row() { grep -A1 '^ *#bytes' "$1" | tail -1 | grep -Eq '^ *[0-9]+ +[0-9]+ '; }
port=7490
for t in ib_send_bw ib_write_bw ib_read_bw; do
	srv=("$t" -R -d "$dev" -F -s 65536 -n 200 -p $port)
	cli=("${srv[@]}" "$ip4")
	cm_pair "perftest $t -R -s 65536 -n 200" $port perf_row
	port=$((port + 1))
done

# --- the project's CQ-contract selftests and a short fuzz campaign, on
# rsoft0, built against trixie's libibverbs
"$bin/cq"
"$bin/cq_flags"
"$bin/fuzz/fuzz" -s 1 -n 5000

# --- and out again
check "rdma link delete $dev" timeout $T rdma link delete "$dev"
check "rmmod rsoft" rmmod rsoft
check "no device left" test -z "$(ls /sys/class/infiniband)"
expect "dmesg: no Unknown symbol" '^$' sh -c "dmesg | grep 'Unknown symbol' || true"
# selftests/kernel-log.sh asks kmemleak too, which the stock kernel lacks.
"$top/selftests/kernel-log.sh" | grep -v '^not ok - kmemleak: debugfs interface missing$' |
	sed 's/^\(\(not \)\{0,1\}ok - \)/\1distro: /'
rm -rf "$work"
exit 0
