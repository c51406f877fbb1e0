#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# veth-loop.sh: rxe and rsoft as two hosts in one namespace, for the
# kernel's RDMA users, which use init_net only. rxe_x on vx and rsoft_r on
# vr, the two ends of a veth pair whose addresses policy routing sends to
# each other over it rather than through loopback. 6.12's rxe holds UDP
# port 4791 of the namespace, so rsoft takes its link's RoCEv2 packets off
# vr (its "tap"). NVMe over RDMA crosses the pair once, an rxe target and
# an rsoft host (tools/twohost.sh runs every pairing, on two machines).
# Then rsoft_w in a namespace sends to rsoft_t on a second veth pair, so
# that a tap also takes another rsoft's trains (UDP GSO) and IPv6. Last,
# rsoft_x replaces rxe_x, and WRITEs cross the pair between two rsoft
# links, rsoft_r still tapped. Needs rsoft.ko loaded, no link and rdma_rxe
# not loaded; leaves none of them, and the routing as it was.
set -u
T=120
ipx=10.9.7.1 ipr=10.9.7.2
ns=rsoft_loop
ipt=10.9.5.1 ipw=10.9.5.2
nqn=nqn.2014-08.org.rsoft:veth-loop
work=$(mktemp -d /dev/shm/veth-loop.XXXXXX)	# tmpfs, for NVMe's files
start=$SECONDS

TAP_PREFIX="veth loop: "
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/roce-lib.sh"
. "$(dirname "$0")/nvme-lib.sh"

# Each address reaches the other over the veth: the local table, which
# would answer first, comes after two rules for what this host sends. A
# packet that comes in from the other end has a local source address,
# which accept_local lets pass.
loop_up() {
	ip link add vx type veth peer name vr &&
		ip addr add $ipx/24 dev vx && ip addr add $ipr/24 dev vr &&
		ip link set vx up && ip link set vr up &&
		ip rule add pref 100 lookup local && ip rule del pref 0 lookup local &&
		ip rule add pref 10 iif lo to $ipx lookup 10 &&
		ip route add $ipx dev vr src $ipr table 10 &&
		ip rule add pref 11 iif lo to $ipr lookup 11 &&
		ip route add $ipr dev vx src $ipx table 11 &&
		sysctl -qw net.ipv4.conf.vx.accept_local=1 net.ipv4.conf.vr.accept_local=1
}
loop_down() {
	ip rule add pref 0 lookup local
	ip rule del pref 100 lookup local
	ip rule del pref 10
	ip rule del pref 11
	ip route flush table 10
	ip route flush table 11
	ip link del vx
}

if ! check "modprobe rdma_rxe" modprobe rdma_rxe; then
	rm -rf "$work"
	exit 0
fi
check "a veth pair whose two addresses route over it" loop_up
check "the route to rxe's address leaves by vr" sh -c "ip route get $ipx | grep -q ' dev vr '"
check "rdma link add rxe_x (on vx)" timeout $T rdma link add rxe_x type rxe netdev vx
check "rdma link add rsoft_r (on vr, beside rxe's port 4791)" \
	timeout $T rdma link add rsoft_r type rsoft netdev vr
check "rsoft_r takes its packets off vr" sh -c \
	"dmesg | grep -q 'rsoft_r: UDP port 4791 is another listener.s here'"
gx= gr=
until_ok 20 gid_index rxe_x $ipx >/dev/null && gx=$(gid_index rxe_x $ipx)
until_ok 20 gid_index rsoft_r $ipr >/dev/null && gr=$(gid_index rsoft_r $ipr)
check "RoCE v2 GIDs of $ipx on rxe_x ($gx) and of $ipr on rsoft_r ($gr)" test -n "$gx" -a -n "$gr"

srv=(ibv_rc_pingpong -s 4096 -n 50 -c -d rxe_x -g "${gx:-1}" -p 7700)
cli=(ibv_rc_pingpong -s 4096 -n 50 -c -d rsoft_r -g "${gr:-1}" -p 7700 $ipx)
pair "ibv_rc_pingpong -g (rsoft_r -> rxe_x)" tcp 7700 pp_done
srv=(rping -s -a $ipr -p 7701 -C 50)
cli=(rping -c -a $ipr -p 7701 -C 50 -v -V)
pair "rping -C 50 -v -V (rxe_x -> rsoft_r)" cm 7701 rping_data_50

# NVMe over RDMA, the target on rxe_x and the host on rsoft_r, which
# takes the data as RoCEv2 packets off vr.
TAP_PREFIX="veth loop: NVMe, rxe target, rsoft host: "
r0=$(counter rsoft_r wire_received_packets)
target_up $ipx "$work/ns.img"
host_io $ipx
target_holds "$work/ns.img" "$work"
target_down
check "rsoft_r took the data off vr ($r0 -> $(counter rsoft_r wire_received_packets) packets)" \
	test "$(counter rsoft_r wire_received_packets)" -gt $((r0 + 8000))
TAP_PREFIX="veth loop: "

# Another rsoft from another namespace: its trains and IPv6 come in
# through a tap too. (rxe_x stays meanwhile: 7.x's rxe keeps the port only
# while a link of the namespace lives.)
if check "ip netns add $ns" ip netns add $ns; then
	check "a veth pair to $ns" veth_pair $ns vt vw $ipt $ipw
	two_links $ns rsoft rsoft_t vt $ipt rsoft_w vw $ipw
	check "rsoft_t takes its packets off vt" sh -c \
		"dmesg | grep -q 'rsoft_t: UDP port 4791 is another listener.s here'"
	trains vw on $ns
	srv=(ib_write_bw -d rsoft_t -x "$g0" -s 65536 -n 50 -F -p 7702)
	cli=(ip netns exec $ns ib_write_bw -d rsoft_w -x "$g1" -s 65536 -n 50 -F -p 7702 $ipt)
	pair "ib_write_bw 64 KiB -n 50, trains (rsoft_w in $ns -> rsoft_t)" tcp 7702 perf_row
	check "rsoft_t took them off vt" test "$(counter rsoft_t wire_received_packets)" -gt 3000
	h0= h1=
	until_ok 20 gid6_index rsoft_t >/dev/null && h0=$(gid6_index rsoft_t)
	until_ok 20 gid6_index rsoft_w >/dev/null && h1=$(gid6_index rsoft_w)
	srv=(ibv_rc_pingpong -s 4096 -n 100 -c -d rsoft_t -g "${h0:-0}" -p 7703)
	cli=(ip netns exec $ns ibv_rc_pingpong -s 4096 -n 100 -c -d rsoft_w -g "${h1:-0}" -p 7703 $ipt)
	pair "ibv_rc_pingpong -g on link-local IPv6 GIDs (rsoft_w in $ns -> rsoft_t)" tcp 7703 pp_done
	check "rdma link delete rsoft_t" timeout $T rdma link delete rsoft_t
	check "rdma link delete rsoft_w (in $ns)" timeout $T ip netns exec $ns rdma link delete rsoft_w
	ip link del vt
	ip netns del $ns
fi

# Two rsoft links of one namespace are two hosts where routing says so:
# rsoft_x takes rxe_x's place, and WRITEs cross the veth between them.
# With rxe gone, rsoft_x opens the namespace's port 4791, which leaves
# vr's packets to rsoft_r's tap: none is taken twice. (A duplicate that
# rsoft_r counts must then be a packet that rsoft_x sent again.)
check "rdma link delete rxe_x" timeout $T rdma link delete rxe_x
check "modprobe -r rdma_rxe" modprobe -r rdma_rxe
check "rdma link add rsoft_x (on vx)" timeout $T rdma link add rsoft_x type rsoft netdev vx
gx=
until_ok 20 gid_index rsoft_x $ipx >/dev/null && gx=$(gid_index rsoft_x $ipx)
x0=$(counter rsoft_x wire_received_packets) r0=$(counter rsoft_r wire_received_packets)
d0=$(counter rsoft_r wire_duplicates) s0=$(counter rsoft_x wire_resent_packets)
srv=(ib_write_bw -d rsoft_r -x "${gr:-1}" -s 65536 -n 50 -F -p 7704)
cli=(ib_write_bw -d rsoft_x -x "${gx:-1}" -s 65536 -n 50 -F -p 7704 $ipr)
pair "ib_write_bw 64 KiB -n 50 (rsoft_x -> rsoft_r)" tcp 7704 perf_row
check "rsoft_r took the WRITEs off vr ($r0 -> $(counter rsoft_r wire_received_packets))" \
	test "$(counter rsoft_r wire_received_packets)" -ge $((r0 + 3200))
check "rsoft_x took rsoft_r's ACKs off vx ($x0 -> $(counter rsoft_x wire_received_packets))" \
	test "$(counter rsoft_x wire_received_packets)" -gt "$x0"
dup=$(($(counter rsoft_r wire_duplicates) - d0)) resent=$(($(counter rsoft_x wire_resent_packets) - s0))
check "rsoft_r took each packet once ($dup duplicates, $resent resent)" test $dup -le $resent
check "rdma link delete rsoft_x" timeout $T rdma link delete rsoft_x
check "rdma link delete rsoft_r" timeout $T rdma link delete rsoft_r
loop_down
rm -rf "$work"
echo "# veth-loop.sh: $((SECONDS - start)) s"
exit 0
