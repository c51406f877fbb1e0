#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# netns.sh: two rsoft RoCE links in two network namespaces joined by a veth
# pair, as two hosts (or containers) are: rsoft_v0 on v0 here, rsoft_v1 on
# v1 in namespace rsoft_ns. The stock pingpongs use the RoCE v2 GIDs of the
# IPv4 addresses, whose MACs the core resolves over the veth; the rdma_cm
# users resolve those addresses themselves, the server here and the client
# there. Needs rsoft.ko loaded and no link yet; leaves none.
set -u
T=120
ns=rsoft_ns
ip0=10.9.8.1 ip1=10.9.8.2
work=$(mktemp -d /tmp/netns.XXXXXX)

TAP_PREFIX="netns: "
. "$(dirname "$0")/tap.sh"
in_ns() { ip netns exec $ns "$@"; }

# The index of the RoCE v2 GID that holds IPv4 address ADDR on DEV's port.
gid_index() { # DEV ADDR
	local p=/sys/class/infiniband/$1/ports/1 want g
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for g in "$p"/gids/*; do
		[[ $(cat "$g") == "$want" ]] || continue
		[[ $(cat "$p/gid_attrs/types/${g##*/}" 2>/dev/null) == "RoCE v2" ]] || continue
		echo "${g##*/}"
		return 0
	done
	return 1
}

if ! ip netns add $ns; then
	fail "ip netns add $ns"
	exit 0
fi
veth() {
	ip link add v0 type veth peer name v1 &&
		ip link set v1 netns $ns &&
		ip addr add $ip0/24 dev v0 && ip link set v0 up &&
		in_ns ip addr add $ip1/24 dev v1 && in_ns ip link set v1 up &&
		in_ns ip link set lo up
}
check "a veth pair between two namespaces" veth
check "rdma link add rsoft_v0 (this namespace)" \
	timeout $T rdma link add rsoft_v0 type rsoft netdev v0
check "rdma link add rsoft_v1 (in $ns, on its netdev there)" \
	timeout $T ip netns exec $ns rdma link add rsoft_v1 type rsoft netdev v1
g0= g1=
until_ok 20 gid_index rsoft_v0 $ip0 >/dev/null && g0=$(gid_index rsoft_v0 $ip0)
until_ok 20 gid_index rsoft_v1 $ip1 >/dev/null && g1=$(gid_index rsoft_v1 $ip1)
if [[ -n $g0 && -n $g1 ]]; then
	pass "RoCE v2 GIDs of $ip0 on rsoft_v0 ($g0) and of $ip1 on rsoft_v1 ($g1)"
else
	fail "RoCE v2 GIDs of $ip0 on rsoft_v0 and of $ip1 on rsoft_v1"
	g0=1 g1=1
fi

# cross NAME DONE SERVER... -- CLIENT...: the server here, the client in the
# namespace; both must succeed and the client print DONE (a regex).
listening() { # PORT: a TCP socket or an rdma_cm ID listens on it
	ss -ltn | grep -q ":$1 " ||
		rdma res show cm_id 2>/dev/null | grep -q "state LISTEN .*src-addr [^ ]*:$1 "
}
up() { # PID PORT: the server listens, or died (the client then fails)
	! kill -0 "$1" 2>/dev/null || listening "$2"
}
cross() {
	local name=$1 done=$2 srv=() s crc=0 src=0
	shift 2
	while [[ $1 != -- ]]; do
		srv+=("$1")
		shift
	done
	shift
	timeout -k 5 $T "${srv[@]}" >"$work/server" 2>&1 &
	s=$!
	until_ok 30 up $s $port
	timeout -k 5 $T ip netns exec $ns "$@" >"$work/client" 2>&1 || crc=$?
	wait $s || src=$?
	if ((crc == 0 && src == 0)) && grep -Eq "$done" "$work/client"; then
		pass "$name"
	else
		fail "$name (client $crc, server $src)"
		sed 's/^/# server: /' "$work/server" | tail -20
		sed 's/^/# client: /' "$work/client" | tail -20
	fi
	port=$((port + 1))
}

port=7600
for pp in "ibv_rc_pingpong -s 4096 -n 200 -c" "ibv_uc_pingpong -s 4096 -n 200 -c" \
	"ibv_ud_pingpong -s 512 -n 200 -c"; do
	read -ra a <<<"$pp"
	cross "$pp -g (rsoft_v1 in $ns -> rsoft_v0)" 'iters in' \
		"${a[@]}" -d rsoft_v0 -g "$g0" -p $port -- \
		"${a[@]}" -d rsoft_v1 -g "$g1" -p $port $ip0
done
cross "rping -C 200 -v -V ($ns -> here)" 'ping data: rdma-ping-199: ' \
	rping -s -a $ip0 -p $port -C 200 -- \
	rping -c -a $ip0 -p $port -C 200 -v -V
cross "ucmatose -c 4 -C 20 ($ns -> here)" 'data transfers complete' \
	ucmatose -b $ip0 -p $port -c 4 -C 20 -- \
	ucmatose -s $ip0 -p $port -c 4 -C 20
port=7174	# udaddy's port is fixed
cross "udaddy -c 2 -C 10 ($ns -> here)" 'data transfers complete' \
	udaddy -b $ip0 -c 2 -C 10 -- \
	udaddy -s $ip0 -c 2 -C 10
port=7610
cross "ib_write_bw -R -s 65536 ($ns -> here)" '^ *65536 +200 ' \
	ib_write_bw -d rsoft_v0 -R -F -s 65536 -n 200 -p $port -- \
	ib_write_bw -d rsoft_v1 -R -F -s 65536 -n 200 -p $port $ip0
# Each device executed what the other sent: the traffic crossed devices.
counter() { # LINK NAME
	rdma statistic show link "$1/1" | grep -o " $2 [0-9]*" | awk '{ print $2 }'
}
crossed() {
	(($(counter rsoft_v0 rdma_writes) >= 200 && $(counter rsoft_v0 receives) > 0 &&
		$(counter rsoft_v1 receives) > 0))
}
if crossed; then
	pass "rdma statistic: each device took the other's requests"
else
	fail "rdma statistic: each device took the other's requests"
	rdma statistic show link rsoft_v0/1 | sed 's/^/# /'
	rdma statistic show link rsoft_v1/1 | sed 's/^/# /'
fi

# The namespace goes with the link still in it: its netdev moves back to
# the initial namespace or is destroyed, and the link with it.
check "rdma link delete rsoft_v0" timeout $T rdma link delete rsoft_v0
check "ip netns delete $ns with rsoft_v1 in it" ip netns delete $ns
ip link del v0 2>/dev/null
if until_ok 20 sh -c '! rdma link | grep -q rsoft_v1'; then
	pass "rsoft_v1 is gone with its netdev"
else
	fail "rsoft_v1 is gone with its netdev"
	rdma link | sed 's/^/# /'
	rdma link delete rsoft_v1 2>/dev/null
fi
rm -rf "$work"
exit 0
