#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# netns.sh: two rsoft RoCE links in two network namespaces joined by a veth
# pair, as two hosts (or containers) are: rsoft_v0 on v0 here, rsoft_v1 on
# v1 in namespace rsoft_ns. Two namespaces are two hosts to rsoft, so
# everything between them crosses the veth as RoCEv2 packets. The stock
# pingpongs use the RoCE v2 GIDs of the IPv4 addresses, whose MACs the core
# resolves over the veth; the rdma_cm users resolve those addresses
# themselves, the server here and the client there. Needs rsoft.ko loaded,
# no link yet and rdma_rxe not loaded (6.12's holds UDP port 4791 here);
# leaves no link.
set -u
T=120
ns=rsoft_ns
ip0=10.9.8.1 ip1=10.9.8.2
work=$(mktemp -d /tmp/netns.XXXXXX)

TAP_PREFIX="netns: "
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/roce-lib.sh"
in_ns() { ip netns exec $ns "$@"; }

if ! ip netns add $ns; then
	fail "ip netns add $ns"
	exit 0
fi
check "a veth pair between two namespaces" veth_pair $ns v0 v1 $ip0 $ip1
two_links $ns rsoft rsoft_v0 v0 $ip0 rsoft_v1 v1 $ip1


port=7600
for pp in "ibv_rc_pingpong -s 4096 -n 200 -c" "ibv_uc_pingpong -s 4096 -n 200 -c" \
	"ibv_ud_pingpong -s 512 -n 200 -c"; do
	read -ra a <<<"$pp"
	srv=("${a[@]}" -d rsoft_v0 -g "$g0" -p $port)
	cli=("${a[@]}" -d rsoft_v1 -g "$g1" -p $port $ip0)
	ns_pair "$pp -g (rsoft_v1 in $ns -> rsoft_v0)" tcp $port pp_done
	port=$((port + 1))
done
srv=(rping -s -a $ip0 -p $port -C 1000)
cli=(rping -c -a $ip0 -p $port -C 1000 -v -V)
ns_pair "rping -C 1000 -v -V ($ns -> here)" cm $port rping_data_1000
port=$((port + 1))
srv=(ucmatose -b $ip0 -p $port -c 4 -C 20)
cli=(ucmatose -s $ip0 -p $port -c 4 -C 20)
ns_pair "ucmatose -c 4 -C 20 ($ns -> here)" cm $port cmatose_done
# (udaddy's -p is the port space: it always uses port 7174)
srv=(udaddy -b $ip0 -c 2 -C 10)
cli=(udaddy -s $ip0 -c 2 -C 10)
ns_pair "udaddy -c 2 -C 10 ($ns -> here)" cm 7174 cmatose_done

perftests rsoft_v0 "$g0" $ip0 rsoft_v1 "$g1" $ip1 7610
port=7650
# librpma (read, write, send, with immediate, all verified), each end on
# the device of its own namespace; libfabric's verbs provider
rpma_srv=rsoft_v0 rpma_cli=rsoft_v1
srv=("$(dirname "$0")/build/rpma/rpma_check" server $ip0 $port)
cli=("$(dirname "$0")/build/rpma/rpma_check" client $ip0 $port)
ns_pair "librpma: read, write, send, with immediate ($ns -> here)" cm $port rpma_ok
port=$((port + 1))
srv=(env FI_PROVIDER=verbs fi_pingpong -p verbs -e msg -d rsoft_v0 -I 100 -S 4096 -c -B $port)
cli=(env FI_PROVIDER=verbs fi_pingpong -p verbs -e msg -d rsoft_v1 -I 100 -S 4096 -c -P $port $ip0)
ns_pair "fi_pingpong -p verbs -e msg -c ($ns -> here)" tcp $port fi_row
port=$((port + 1))

# Each device executed what the other sent (perftests alone had rsoft_v0
# execute 60 WRITEs, 40 READs and 40 atomics, 20 a run), and it all
# crossed the veth: each took thousands of packets off it.
crossed() {
	(($(counter rsoft_v0 rdma_writes) >= 60 && $(counter rsoft_v0 rdma_reads) >= 40 &&
		$(counter rsoft_v0 atomics) >= 40 && $(counter rsoft_v0 receives) > 0 &&
		$(counter rsoft_v1 receives) > 0 &&
		$(counter rsoft_v0 wire_received_packets) > 10000 &&
		$(counter rsoft_v1 wire_received_packets) > 10000 &&
		$(counter rsoft_v1 wire_sent_packets) > 10000))
}
if crossed; then
	pass "rdma statistic: each device took the other's requests, as RoCEv2 packets"
else
	fail "rdma statistic: each device took the other's requests, as RoCEv2 packets"
	rdma statistic show link rsoft_v0/1 | sed 's/^/# /'
	rdma statistic show link rsoft_v1/1 | sed 's/^/# /'
fi

# A READ of 1 MiB: 1024 response packets, which rsoft_v0's worker sends
# in batches. Sent from the softirq that took the READ, they would
# overflow the veth's backlog (1000 packets), and be asked for again.
# They leave v0 in trains, skbs of up to 15 KiB that the stack cuts
# apart at the far end (v0 counts one packet a train).
r1=$(counter rsoft_v1 wire_resent_packets)
p0=$(counter rsoft_v0 wire_sent_packets) s0=$(</sys/class/net/v0/statistics/tx_packets)
srv=(ib_read_bw -d rsoft_v0 -x "$g0" -F -s 1048576 -n 5 -p $port)
cli=(ib_read_bw -d rsoft_v1 -x "$g1" -F -s 1048576 -n 5 -p $port $ip0)
ns_pair "ib_read_bw -s 1048576 -n 5 ($ns -> here)" tcp $port perf_row
r1=$(($(counter rsoft_v1 wire_resent_packets) - r1))
check "... none of its READs asked again for response packets (resent $r1)" test $r1 -eq 0
p0=$(($(counter rsoft_v0 wire_sent_packets) - p0))
s0=$(($(</sys/class/net/v0/statistics/tx_packets) - s0))
check "... rsoft_v0 sent its $p0 packets in $s0 skbs (trains)" test $p0 -ge 5120 -a $((s0 * 8)) -lt $p0
port=$((port + 1))

# A WRITE of 1 MiB: 1024 packets, which leave at most 128 ahead of the
# last one answered (icrc.py follows them in a capture on v0).
pcap=$work/write.pcap
trains v1 off $ns
timeout -k 5 $((2 * T)) tcpdump -i v0 -U -s 96 -w "$pcap" udp port 4791 2>"$work/tcpdump.err" &
dump=$!
until_ok 30 grep -q listening "$work/tcpdump.err" || echo "# tcpdump did not start"
srv=(ib_write_bw -d rsoft_v0 -x "$g0" -F -s 1048576 -n 5 -p $port)
cli=(ib_write_bw -d rsoft_v1 -x "$g1" -F -s 1048576 -n 5 -p $port $ip0)
ns_pair "ib_write_bw -s 1048576 -n 5 ($ns -> here)" tcp $port perf_row
kill $dump 2>/dev/null
wait $dump
trains v1 on $ns
rc=0
out=$(python3 -I -S "$(dirname "$0")/icrc.py" ahead "$pcap" --src $ip1 --max 128 2>&1) || rc=$?
check "... its packets ran at most 128 PSNs ahead of the answers ($out)" test $rc -eq 0
port=$((port + 1))

# A 64 KiB WRITE's second packet lost: the responder NAKs the gap when
# the third comes, and the requester sends none of the rest (which the
# responder would drop) before it goes back: 322 packets for the five
# WRITEs' 320, where it used to send the rest of the message (383).
if check "first RDMA WRITE MIDDLE packet lost: on v0 and v1" \
	lost_first 1 v0 v1 on match u8 0x07 0xff at 28 -- 2; then
	s1=$(counter rsoft_v1 wire_sent_packets)
	# A local ACK timeout of 4 s: a guest that stalls sets off no probe.
	srv=(ib_write_bw -d rsoft_v0 -x "$g0" -F -s 65536 -n 5 -u 20 -p $port)
	cli=(ib_write_bw -d rsoft_v1 -x "$g1" -F -s 65536 -n 5 -u 20 -p $port $ip0)
	ns_pair "ib_write_bw -s 65536 -n 5, one packet lost ($ns -> here)" tcp $port perf_row
	s1=$(($(counter rsoft_v1 wire_sent_packets) - s1))
	check "first RDMA WRITE MIDDLE packet lost: off" lost_first 1 v0 v1 off
	check "... one lost (${first_drops:-?}); rsoft_v1 stopped sending when NAKed: $s1 packets (at most 352)" \
		test "${first_drops:-0}" -eq 1 -a $s1 -le 352
	port=$((port + 1))
else
	shape v0 v1 off
fi

# READ answers 100 ms late, within a local ACK timeout of 537 ms: a READ
# is not probed (asked for again) at an eighth of it as a SEND or WRITE
# is; its responder would read it again whole.
if check "READ responses 100 ms late: on v0 and v1" \
	shape v0 v1 1 "delay 100ms" match u8 0x10 0xff at 28 -- 2; then
	r1=$(counter rsoft_v1 wire_resent_packets)
	srv=(ib_read_lat -d rsoft_v0 -x "$g0" -F -s 64 -n 10 -u 17 -p $port)
	cli=(ib_read_lat -d rsoft_v1 -x "$g1" -F -s 64 -n 10 -u 17 -p $port $ip0)
	ns_pair "ib_read_lat -s 64 -n 10, answers late ($ns -> here)" tcp $port perf_row
	r1=$(($(counter rsoft_v1 wire_resent_packets) - r1))
	check "READ responses 100 ms late: off" shape v0 v1 off
	check "... rsoft_v1 asked for no READ again (resent $r1)" test $r1 -eq 0
	port=$((port + 1))
else
	shape v0 v1 off
fi

misfits rsoft_v0 "$g0" rsoft_v1 "$g1" v0 v1
window rsoft_v0 "$g0" rsoft_v1 "$g1" v0 v1
uc_loss rsoft_v0 "$g0" rsoft_v1 "$g1" v0 v1

# RC over a lossy veth (netem: 2% lost and 2% duplicated each way, a
# quarter reordered; see lossy_rc): rsoft's reliability at both ends, no
# RETRY_EXC at the default retry count; both sent packets again.
if check "netem on v0 and v1: loss 2%, duplicate 2%, reorder 25%" lossy v0 v1 on; then
	r0=$(counter rsoft_v0 wire_resent_packets) r1=$(counter rsoft_v1 wire_resent_packets)
	lossy_rc rsoft_v0 "$g0" $ip0 rsoft_v1 "$g1" $ip1 7620
	r0=$(($(counter rsoft_v0 wire_resent_packets) - r0))
	r1=$(($(counter rsoft_v1 wire_resent_packets) - r1))
	check "lossy: both sent packets again ($r0, $r1)" test $r0 -gt 0 -a $r1 -gt 0
	check "netem off" lossy v0 v1 off
fi

# write_stream SECS: ib_write_bw -D SECS from rsoft_v1 in $ns to rsoft_v0
# on $port, its client $c and its server $s; passes once it runs.
write_stream() {
	timeout -k 5 $T ib_write_bw -d rsoft_v0 -x "$g0" -F -D "$1" -p $port >"$work/server" 2>&1 &
	s=$!
	until_ok 60 listening tcp $port $s
	timeout -k 5 $T ip netns exec $ns ib_write_bw -d rsoft_v1 -x "$g1" -F -D "$1" -p $port $ip0 \
		>"$work/client" 2>&1 &
	c=$!
	w0=$(counter rsoft_v0 rdma_writes)
	check "a WRITE stream from $ns runs" until_ok 30 streaming
}
streaming() { (($(counter rsoft_v0 rdma_writes) > w0 + 100)); }

# Carrier, MTU and address changes under a WRITE stream, each undone a
# second later: v0's MTU down to 1000, less than the QPs' packets of
# 1024 bytes of data need, and back; v1 down and up (each end loses its
# carrier); and $ip0 deleted from v0 (its GID with it) and added again. Whatever becomes of the stream, both links stay,
# their ports come back ACTIVE with their GIDs, and an RC pingpong then
# runs between them; the kernel log's check at the end finds no report
# (a packet sent from freed memory would be KASAN's).
write_stream 20
e0=$(counter rsoft_v0 wire_send_errors) e1=$(counter rsoft_v1 wire_send_errors)
for change in "ip link set v0 mtu 1000" "ip link set v0 mtu 1500" \
	"in_ns ip link set v1 down" "in_ns ip link set v1 up" \
	"ip addr del $ip0/24 dev v0" "ip addr add $ip0/24 dev v0"; do
	check "... under it: $change" $change
	nap 1
done
wait $c $s
echo "# the stream's client: $(grep -E '^ *65536|error|failed' "$work/client" | head -2 | tr '\n' ' ')"
echo "# wire_send_errors rose by $(($(counter rsoft_v0 wire_send_errors) - e0)) and $(($(counter rsoft_v1 wire_send_errors) - e1))"
active() {
	grep -q ACTIVE /sys/class/infiniband/rsoft_v0/ports/1/state &&
		grep -q ACTIVE /sys/class/infiniband/rsoft_v1/ports/1/state
}
check "... both ports ACTIVE again" until_ok 30 active
g0=
until_ok 20 gid_index rsoft_v0 $ip0 >/dev/null && g0=$(gid_index rsoft_v0 $ip0)
check "... the RoCE v2 GID of $ip0 back on rsoft_v0 (${g0:-none})" test -n "$g0"
port=$((port + 1))
srv=(ibv_rc_pingpong -s 4096 -n 50 -c -d rsoft_v0 -g "${g0:-1}" -p $port)
cli=(ibv_rc_pingpong -s 4096 -n 50 -c -d rsoft_v1 -g "$g1" -p $port $ip0)
ns_pair "... then ibv_rc_pingpong -s 4096 -n 50 -c (rsoft_v1 in $ns -> rsoft_v0)" tcp $port pp_done
port=$((port + 1))

# RC requests forged packet by packet (selftests/wire/forge) from $ip0 at
# rsoft_v1, in orders and sizes no verbs requester sends, then at random;
# rsoft_v0 goes meanwhile, so that nothing else holds UDP port 4791 in this
# namespace: what rsoft_v1 refuses it NAKs as rxe does and ends the QP,
# and nothing is placed where the requester may not write. Then forged answers to
# rsoft_v1's READs and atomics (selftests/wire/replies), at random: none
# writes outside the WR's buffer.
# forged PROG NAME: selftests/wire/PROG from $ip0 at rsoft_v1, its lines
# shown; passes as NAME when it exits 0.
forged() {
	local out rc=0
	out=$(timeout -k 5 $T "$(dirname "$0")/build/wire/$1" rsoft_v1 "$g1" $ip0 $ip1 2>&1) ||
		rc=$?
	echo "$out"
	check "$2" test $rc -eq 0
}
if check "rdma link delete rsoft_v0" rdma link delete rsoft_v0; then
	forged forge "forged RC requests at rsoft_v1: NAKed as due, nothing placed where it may not be"
	forged replies \
		"forged answers at rsoft_v1's READs and atomics: nothing written outside their buffers"
	check "rdma link add rsoft_v0 again" timeout $T rdma link add rsoft_v0 type rsoft netdev v0
	g0=
	until_ok 20 gid_index rsoft_v0 $ip0 >/dev/null && g0=$(gid_index rsoft_v0 $ip0)
	check "... the RoCE v2 GID of $ip0 on rsoft_v0 (${g0:-none})" test -n "$g0"
	g0=${g0:-1}
fi

# The veth removed while a WRITE stream crosses it: both links go, the
# writer sees its device fail and exits, and nothing is left behind.
write_stream 30
in_ns ip link del v1
gone() { ! rdma link | grep -Eq 'rsoft_v[01]/'; }
check "ip link del of the veth under traffic takes both links" until_ok 30 gone
# (perftest's server waits on its TCP socket, which the veth took along.)
ended() { ! kill -0 $c 2>/dev/null; }
if until_ok 30 ended; then
	pass "the writer in $ns exits"
else
	fail "the writer in $ns exits"
	sed 's/^/# server: /' "$work/server" | tail -5
	sed 's/^/# client: /' "$work/client" | tail -5
fi
kill $c $s 2>/dev/null
wait $c $s 2>/dev/null

ip netns delete $ns

# A namespace deleted with a link in it: its netdev is destroyed, and the
# link with it. (A new namespace: the one above lives on until the TCP
# connection the veth took along times out.)
ns=rsoft_ns2
ip netns add $ns && in_ns ip link add d1 type dummy && in_ns ip link set d1 up
check "rdma link add rsoft_d1 (in $ns)" \
	timeout $T ip netns exec $ns rdma link add rsoft_d1 type rsoft netdev d1
check "ip netns delete $ns with rsoft_d1 in it" ip netns delete $ns
gone() { ! rdma link | grep -q 'rsoft_d1/'; }
if until_ok 30 gone; then
	pass "rsoft_d1 is gone with its namespace"
else
	fail "rsoft_d1 is gone with its namespace"
	rdma link | sed 's/^/# /'
	rdma link delete rsoft_d1 2>/dev/null
fi
rm -rf "$work"
exit 0
