#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# wire.sh: rsoft's RoCEv2 wire against the kernel's rxe, two hosts joined by
# a veth pair: rxe_w0 on w0 here (rxe stays in init_net on 6.12), rsoft_w1
# on w1 in namespace rsoft_wire. selftests/icrc.py captures the RoCEv2
# frames on w0 and checks them with an ICRC of its own, independent of both
# devices: first rxe's packets (which proves the checker, and with a bit
# flipped that it can fail), then rsoft's UD SENDs, which rxe must take too
# (its rcvd_pkts counts only packets whose headers and ICRC it checked).
# Then what rxe sends back: the UD pingpong (over IPv4 and IPv6) and
# rdma_cm's SIDR (udaddy); RC and UC both ways, partly captured with
# tcpdump for tshark to decode and icrc.py to check; the rdma_cm users
# (rping, ucmatose, perftest -R, librpma, fi_pingpong) each way; and RC
# again with netem losing, duplicating and reordering packets on the veth.
# Needs rsoft.ko loaded; loads and unloads rdma_rxe; leaves nothing.
set -u
T=60
ns=rsoft_wire
ip0=10.9.7.1 ip1=10.9.7.2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/wire.XXXXXX)

TAP_PREFIX="wire: "
. "$here/tap.sh"
. "$here/roce-lib.sh"
in_ns() { ip netns exec $ns "$@"; }
# (No site packages: every module read costs the TCG guest seconds.)
icrc_py() { python3 -I -S "$here/icrc.py" "$@"; }

if ! ip netns add $ns; then
	fail "ip netns add $ns"
	exit 0
fi
check "a veth pair, w1 in $ns" veth_pair $ns w0 w1 $ip0 $ip1
check "modprobe rdma_rxe" modprobe rdma_rxe
two_links $ns rxe rxe_w0 w0 $ip0 rsoft_w1 w1 $ip1

# One capture on w0 for both directions (one Python start less): each
# check takes the packets of its source address.
pcap=$work/w0.pcap
# (python3 itself in the background, not a function's subshell: $cap gets
# the signals)
python3 -I -S "$here/icrc.py" capture w0 $((4 * T)) "$pcap" 2>"$work/capture.err" &
cap=$!
until_ok 30 test -s "$pcap" || echo "# icrc.py capture did not start"
# synced: every frame that went by is in $pcap
synced() {
	rm -f "$pcap.sync"
	kill -USR1 $cap 2>/dev/null && until_ok 30 test -s "$pcap.sync"
}
# icrc NAME PCAP ARG...: icrc.py check --and-flip's verdict on PCAP, its
# lines as comments
icrc() {
	local name=$1 file=$2 out rc=0
	shift 2
	out=$(icrc_py check "$file" --and-flip "$@" 2>&1) || rc=$?
	sed 's/^#* */# icrc.py: /' <<<"$out"
	if ((rc == 0)); then pass "$name"; else fail "$name"; fi
}
# decoded NAME PCAP SRC DST: tshark decodes every frame of PCAP (UDP to or
# from port 4791) as RoCE, with its InfiniBand dissector: none malformed,
# none with an error; SRC and DST both sent some. Lists the BTH opcodes
# that SRC sent, with their counts.
decoded() {
	local rc=0
	tshark -r "$2" -T fields -e ip.src -e frame.protocols -e _ws.malformed \
		-e _ws.expert.severity -e infiniband.bth.opcode 2>"$work/tshark.err" |
		awk -F '\t' -v a="$3" -v b="$4" '
			{ n++; from[$1]++ }
			$1 == a { op[$5]++ }
			# 8388608: PI_ERROR
			$2 !~ /:udp:infiniband/ || $3 != "" || $4 ~ /8388608/ {
				if (++bad <= 5) print "# frame " n ": " $0
			}
			END {
				printf "# tshark: %d frames, %d bad; %d from %s, %d from %s\n",
					n, bad, from[a], a, from[b], b
				printf "# tshark: opcodes from %s:", a
				for (o in op) printf " %s (%d)", o, op[o]
				print ""
				exit !(n && !bad && from[a] && from[b])
			}' || rc=$?
	if ((rc == 0)); then
		pass "$1"
	else
		fail "$1"
		show "$work/tshark.err" "tshark stderr"
	fi
}

# --- a. rxe's own UD SENDs to $ip1: the checker accepts each, and rejects
# each with a bit flipped. perftest's client reports once its SENDs
# completed (rxe completes a UD SEND once it sent it); its server on
# rsoft_w1 is stopped then, whatever it took (c. checks what arrives).
n=50 port=7700
d=$work/a
mkdir -p "$d"
sent0=$(counter rxe_w0 sent_pkts)
timeout -k 5 $T ip netns exec $ns ib_send_bw -d rsoft_w1 -c UD -x "$g1" -F -n $n -p $port \
	>"$d/server" 2>&1 &
s=$!
ns_listening() { # (a server that died is not waited for)
	! kill -0 $s 2>/dev/null ||
		in_ns grep -q "$(printf ':%04X ' $port).* 0A " /proc/net/tcp /proc/net/tcp6
}
until_ok 60 ns_listening
timeout -k 5 $T ib_send_bw -d rxe_w0 -c UD -x "$g0" -F -n $n -p $port $ip1 >"$d/client" 2>&1 &
c=$!
sent() { perf_row "$d" || ! kill -0 $c 2>/dev/null; }
until_ok $T sent
if perf_row "$d"; then
	pass "rxe_w0 sends $n UD SENDs to $ip1 (ib_send_bw -c UD, the client's row)"
else
	fail "rxe_w0 sends $n UD SENDs to $ip1 (ib_send_bw -c UD, the client's row)"
	show "$d/client" client
	show "$d/server" server
fi
kill $c $s 2>/dev/null
wait $c $s 2>/dev/null
echo "# rxe_w0 sent_pkts rose by $(($(counter rxe_w0 sent_pkts) - sent0))"
synced || echo "# icrc.py capture did not sync"
icrc "rxe's packets from $ip0: every ICRC checks, and fails with a payload bit flipped" "$pcap" \
	--src $ip0 --opcode 0x64 --min $n

# --- b. rsoft -> rxe: UD SENDs from rsoft_w1 to a GID no rsoft port holds
# leave on w1 as RoCEv2 packets; rxe_w0's server takes every one.
n=200 port=7701
srv=(ib_send_bw -d rxe_w0 -c UD -x "$g0" -F -n $n -p $port)
cli=(ip netns exec $ns ib_send_bw -d rsoft_w1 -c UD -x "$g1" -F -n $n -p $port $ip0)
rows() { perf_row "$1" && grep -A1 '^ *#bytes' "$1/server" | tail -1 | grep -Eq "^ *[0-9]+ +$n "; }
rcvd0=$(counter rxe_w0 rcvd_pkts)
pair "ib_send_bw -c UD -n $n (rsoft_w1 in $ns -> rxe_w0 here): both rows" tcp $port rows
kill $cap 2>/dev/null
wait $cap
show "$work/capture.err" "icrc.py capture"
rcvd=$(($(counter rxe_w0 rcvd_pkts) - rcvd0))
check "rxe_w0 took at least $n packets (rcvd_pkts rose by $rcvd: headers and ICRC checked)" \
	test $rcvd -ge $n
icrc "rsoft's packets from $ip1: UD SEND_ONLY, every ICRC checks, and fails with a payload bit flipped" "$pcap" \
	--src $ip1 --opcode 0x64 --min $n

# --- c. rsoft listens on port 4791 in its namespace: what rxe sends comes
# back in. Garbage to the port first: dropped and counted (a bad ICRC),
# and the QPs work on.
bad0=$(counter rsoft_w1 wire_icrc_errors)
for i in 1 2 3; do
	printf 'garbage %060d' $i >/dev/udp/$ip1/4791
done
check "3 datagrams of garbage to $ip1:4791: counted as ICRC errors" \
	until_ok 10 test "$(($(counter rsoft_w1 wire_icrc_errors) - bad0))" -eq 3
rcvd0=$(counter rsoft_w1 wire_received_packets)
port=7702
srv=(ibv_ud_pingpong -d rxe_w0 -g "$g0" -p $port -s 512 -n 100 -c)
cli=(ibv_ud_pingpong -d rsoft_w1 -g "$g1" -p $port -s 512 -n 100 -c $ip0)
ns_pair "ibv_ud_pingpong -s 512 -n 100 -c -g (rsoft_w1 in $ns <-> rxe_w0 here)" tcp $port pp_done
srv=(ip netns exec $ns ibv_ud_pingpong -d rsoft_w1 -g "$g1" -p 7707 -s 512 -n 100 -c)
cli=(ibv_ud_pingpong -d rxe_w0 -g "$g0" -p 7707 -s 512 -n 100 -c $ip1)
pair "ibv_ud_pingpong -s 512 -n 100 -c -g (rxe_w0 here <-> rsoft_w1 in $ns, the server)" ns_tcp 7707 pp_done
# rdma_cm resolves over QP1, whose MADs cross the wire too; udaddy always
# uses port 7174.
srv=(udaddy -b $ip0 -c 2 -C 10)
cli=(udaddy -s $ip0 -c 2 -C 10)
ns_pair "udaddy -c 2 -C 10 (rsoft_w1 in $ns <-> rxe_w0 here): SIDR over QP1, then datagrams" \
	cm 7174 cmatose_done
srv=(ip netns exec $ns udaddy -b $ip1 -c 2 -C 10)
cli=(udaddy -s $ip1 -c 2 -C 10)
pair "udaddy -c 2 -C 10 (rxe_w0 here <-> rsoft_w1 in $ns, the server)" ns_cm 7174 cmatose_done
# The same pingpong over IPv6: the link-local addresses' RoCE v2 GIDs.
h0=$(gid6_index rxe_w0) h1=$(gid6_index rsoft_w1)
port=7703
srv=(ibv_ud_pingpong -d rxe_w0 -g "${h0:-0}" -p $port -s 512 -n 50 -c)
cli=(ibv_ud_pingpong -d rsoft_w1 -g "${h1:-1}" -p $port -s 512 -n 50 -c $ip0)
ns_pair "ibv_ud_pingpong -s 512 -n 50 -c over IPv6 link-local GIDs (rsoft_w1 in $ns <-> rxe_w0 here)" \
	tcp $port pp_done
rcvd=$(($(counter rsoft_w1 wire_received_packets) - rcvd0))
check "rsoft_w1 took $rcvd packets from rxe_w0 (at least 150), none dropped" \
	test $rcvd -ge 150 -a "$(counter rsoft_w1 wire_receive_drops)" -eq 0
# RC over IPv6: messages of 16 packets, which rsoft sends in trains whose
# packets the stack gives IPv6 headers of their own, the data checked.
port=7790
srv=(ibv_rc_pingpong -d rxe_w0 -g "${h0:-0}" -p $port -s 16384 -n 50 -c)
cli=(ibv_rc_pingpong -d rsoft_w1 -g "${h1:-1}" -p $port -s 16384 -n 50 -c $ip0)
ns_pair "ibv_rc_pingpong -s 16384 -n 50 -c over IPv6 link-local GIDs (rsoft_w1 in $ns <-> rxe_w0 here)" \
	tcp $port pp_done

# --- f. RC from rsoft to rxe: SENDs and WRITEs cut into packets of the
# path MTU, each message's last asking for the ACK that completes it (one
# message in flight). rxe's responder takes them only in order, with the
# right lengths and PSNs; the ACKs come back in through rsoft's socket.
acks0=$(counter rsoft_w1 wire_received_packets) rcvd0=$(counter rxe_w0 rcvd_pkts)
n=25 port=7704
for t in "ib_send_bw -s 4096" "ib_write_bw -s 65536"; do
	srv=($t -d rxe_w0 -x "$g0" -F -n $n -p $port)
	cli=($t -d rsoft_w1 -x "$g1" -F -n $n -p $port $ip0)
	ns_pair "$t -n $n, RC (rsoft_w1 in $ns -> rxe_w0 here): the client's row" tcp $port perf_row
	port=$((port + 1))
done
acks=$(($(counter rsoft_w1 wire_received_packets) - acks0))
rcvd=$(($(counter rxe_w0 rcvd_pkts) - rcvd0))
check "rxe_w0 took $rcvd packets (at least $((n * 4 + n * 64))), rsoft_w1 $acks ACKs (at least $((2 * n)))" \
	test $rcvd -ge $((n * 68)) -a $acks -ge $((2 * n))

# rsoft's responder (the path MTU is 1024): SENDs and WRITEs of 64
# packets from rxe.
port=7730
for t in "ib_send_bw -s 65536" "ib_write_bw -s 65536"; do
	srv=(ip netns exec $ns $t -d rsoft_w1 -x "$g1" -F -n $n -p $port)
	cli=($t -d rxe_w0 -x "$g0" -F -n $n -p $port $ip1)
	pair "$t -n $n, RC (rxe_w0 here -> rsoft_w1 in $ns): the client's row" ns_tcp $port perf_row
	port=$((port + 1))
done
# rsoft's requester: READs whose responses come back in packets of the
# path MTU, placed in order.
port=7714
srv=(ib_read_bw -d rxe_w0 -x "$g0" -F -s 65536 -n $n -p $port)
cli=(ib_read_bw -d rsoft_w1 -x "$g1" -F -s 65536 -n $n -p $port $ip0)
ns_pair "ib_read_bw -s 65536 -n $n (rsoft_w1 in $ns -> rxe_w0 here): the client's row" tcp $port perf_row

# What follows is captured with tcpdump on w0, to be decoded by tshark
# and checked by icrc.py at the end: SENDs of 4 packets both ways, on RC
# and on UC, with the data checked; WRITEs of one packet both ways; READs
# answered with READ RESPONSEs cut at the path MTU, and atomics, each way;
# rdma_cm's MADs and rping's SENDs, READs and WRITEs, each side the server.
rc_pcap=$work/rc.pcap
n=100
# rsoft's packets leave one by one, as a NIC without UDP segmentation
# puts them on the wire (a train would show as one large packet).
trains w1 off $ns
timeout -k 5 $((10 * T)) tcpdump -i w0 -U -w "$rc_pcap" udp port 4791 2>"$work/tcpdump.err" &
dump=$!
until_ok 30 grep -q listening "$work/tcpdump.err" || echo "# tcpdump did not start"
port=7710
for t in ibv_rc_pingpong ibv_uc_pingpong; do
	srv=($t -d rxe_w0 -g "$g0" -p $port -s 4096 -n 50 -c)
	cli=($t -d rsoft_w1 -g "$g1" -p $port -s 4096 -n 50 -c $ip0)
	ns_pair "$t -s 4096 -n 50 -c -g (rsoft_w1 in $ns <-> rxe_w0 here)" tcp $port pp_done
	# and rsoft the server
	srv=(ip netns exec $ns $t -d rsoft_w1 -g "$g1" -p $((port + 8)) -s 4096 -n 50 -c)
	cli=($t -d rxe_w0 -g "$g0" -p $((port + 8)) -s 4096 -n 50 -c $ip1)
	pair "$t -s 4096 -n 50 -c -g (rxe_w0 here <-> rsoft_w1 in $ns, the server)" ns_tcp $((port + 8)) pp_done
	port=$((port + 10))
done
port=7711
srv=(ib_write_lat -d rxe_w0 -x "$g0" -F -s 1024 -n $n -p $port)
cli=(ib_write_lat -d rsoft_w1 -x "$g1" -F -s 1024 -n $n -p $port $ip0)
ns_pair "ib_write_lat -s 1024 -n $n (rsoft_w1 in $ns <-> rxe_w0 here): the client's row" tcp $port perf_row
reads0=$(counter rsoft_w1 rdma_reads) atomics0=$(counter rsoft_w1 atomics)
port=7712
for t in "ib_read_lat -s 4096" "ib_atomic_lat"; do
	srv=(ip netns exec $ns $t -d rsoft_w1 -x "$g1" -F -n $n -p $port)
	cli=($t -d rxe_w0 -x "$g0" -F -n $n -p $port $ip1)
	pair "$t -n $n (rxe_w0 here -> rsoft_w1 in $ns): the client's row" ns_tcp $port perf_row
	port=$((port + 1))
done
reads=$(($(counter rsoft_w1 rdma_reads) - reads0))
atomics=$(($(counter rsoft_w1 atomics) - atomics0))
check "rsoft_w1 executed rxe_w0's $reads READs and $atomics atomics (at least $n each)" \
	test $reads -ge $n -a $atomics -ge $n
port=7715
for t in "ib_read_lat -s 4096" "ib_atomic_lat"; do
	srv=($t -d rxe_w0 -x "$g0" -F -n $n -p $port)
	cli=($t -d rsoft_w1 -x "$g1" -F -n $n -p $port $ip0)
	ns_pair "$t -n $n (rsoft_w1 in $ns -> rxe_w0 here): the client's row" tcp $port perf_row
	port=$((port + 1))
done

psn_wrap "" rxe_w0 "$g0" rsoft_w1 "$g1"
misfits rxe_w0 "$g0" rsoft_w1 "$g1" w0 w1
window rxe_w0 "$g0" rsoft_w1 "$g1" w0 w1
uc_loss rxe_w0 "$g0" rsoft_w1 "$g1" w0 w1

# rdma_cm between rsoft and rxe, each side the server: ucmatose's 4
# connections, their CM MADs over QP1 and their SENDs.
port=7760
srv=(ucmatose -b $ip0 -p $port -c 4 -C 20)
cli=(ucmatose -s $ip0 -p $port -c 4 -C 20)
ns_pair "ucmatose -c 4 -C 20 (rsoft_w1 in $ns -> rxe_w0 here)" cm $port cmatose_done
srv=(ip netns exec $ns ucmatose -b $ip1 -p $port -c 4 -C 20)
cli=(ucmatose -s $ip1 -p $port -c 4 -C 20)
pair "ucmatose -c 4 -C 20 (rxe_w0 here -> rsoft_w1 in $ns)" ns_cm $port cmatose_done
kill $dump 2>/dev/null
wait $dump
trains w1 on $ns
show "$work/tcpdump.err" tcpdump
decoded "tshark decodes the capture as RoCE, nothing malformed" "$rc_pcap" $ip1 $ip0
icrc "tcpdump's capture: each of rsoft's packets from $ip1 checks, and fails with a bit flipped" \
	"$rc_pcap" --src $ip1 --min 1000

# rping's SENDs, the server's READ of the client's buffer and WRITE back,
# every round trip's data checked (-V), each side the server. 1000 round
# trips through rxe take 60 s and more in a debug guest on a slow host
# (netns.sh bounds its rping with 120 s as well).
port=7740
srv=(rping -s -a $ip0 -p $port -C 1000)
cli=(rping -c -a $ip0 -p $port -C 1000 -v -V)
T=120 ns_pair "rping -C 1000 -v -V (rsoft_w1 in $ns -> rxe_w0 here)" cm $port rping_data_1000
srv=(ip netns exec $ns rping -s -a $ip1 -p $port -C 1000)
cli=(rping -c -a $ip1 -p $port -C 1000 -v -V)
T=120 pair "rping -C 1000 -v -V (rxe_w0 here -> rsoft_w1 in $ns)" ns_cm $port rping_data_1000
# Each of perftest's tests each way, over TCP (-x) with rsoft the client
# and over rdma_cm (-R) with rxe the client; librpma (every operation
# verified) and libfabric's verbs provider, each side the server.
perftests rxe_w0 "$g0" $ip0 rsoft_w1 "$g1" $ip1 7761
port=7800
rpma=$here/build/rpma/rpma_check
fi_pp=(env FI_PROVIDER=verbs fi_pingpong -p verbs -e msg -I 100 -S 4096 -c)
rpma_srv=rxe_w0 rpma_cli=rsoft_w1
srv=("$rpma" server $ip0 $port)
cli=("$rpma" client $ip0 $port)
ns_pair "librpma: read, write, send, with immediate (rsoft_w1 in $ns -> rxe_w0 here)" cm $port rpma_ok
rpma_srv=rsoft_w1 rpma_cli=rxe_w0
srv=(ip netns exec $ns "$rpma" server $ip1 $port)
cli=("$rpma" client $ip1 $port)
pair "librpma: read, write, send, with immediate (rxe_w0 here -> rsoft_w1 in $ns)" ns_cm $port rpma_ok
port=$((port + 1))
srv=("${fi_pp[@]}" -d rxe_w0 -B $port)
cli=("${fi_pp[@]}" -d rsoft_w1 -P $port $ip0)
ns_pair "fi_pingpong -p verbs -e msg -c (rsoft_w1 in $ns -> rxe_w0 here)" tcp $port fi_row
port=$((port + 1))
srv=(ip netns exec $ns "${fi_pp[@]}" -d rsoft_w1 -B $port)
cli=("${fi_pp[@]}" -d rxe_w0 -P $port $ip1)
pair "fi_pingpong -p verbs -e msg -c (rxe_w0 here -> rsoft_w1 in $ns)" ns_tcp $port fi_row

# --- e. a packet fuzzer (selftests/wire/pktfuzz.c) from raw sockets here
# at rsoft_w1, one sender per CPU: valid UD SENDs, the same with one thing
# wrong, and random bytes, to QP1 (with the GSI Q_Key most of the time:
# valid ones reach the MAD layer) and to a live UD QP, an ibv_ud_pingpong
# server's waiting for its client. Each packet that arrives is taken or
# dropped, and counted. Then both QPs under attack move verified data: the
# pingpong runs, and udaddy's SIDR goes through QP1.
n=100000 seed=4791 port=7704
d=$work/e
mkdir -p "$d"
wire_sum() {
	echo $(($(counter rsoft_w1 wire_received_packets) + $(counter rsoft_w1 wire_icrc_errors) +
		$(counter rsoft_w1 wire_receive_drops)))
}
rcvd0=$(counter rsoft_w1 wire_received_packets)
icrc0=$(counter rsoft_w1 wire_icrc_errors)
drop0=$(counter rsoft_w1 wire_receive_drops)
sum0=$(wire_sum)
timeout -k 5 $((10 * T)) ip netns exec $ns \
	ibv_ud_pingpong -d rsoft_w1 -g "$g1" -p $port -s 512 -n 100 -c >"$d/server" 2>&1 &
s=$!
until_ok 60 ns_listening
qpn=$(rdma res show qp link rsoft_w1/1 |
	awk '/ type UD .*comm ibv_ud_pingpong/ {
		for (i = 1; i < NF; i++) if ($i == "lqpn") { print $(i + 1); exit }
	}')
echo "# the ibv_ud_pingpong server's QP on rsoft_w1: ${qpn:-not found}"
t0=$SECONDS
rc=0
timeout -k 5 $((10 * T)) "$here/build/wire/pktfuzz" -S $ip0 -D $ip1 -q "${qpn:-0x100}" -q 1 \
	-k 0x80010000 -n $n -s $seed -j "$(nproc)" -v >"$d/fuzz" 2>&1 || rc=$?
sed 's/^/# /' "$d/fuzz"
echo "# pktfuzz: $((SECONDS - t0)) s"
check "pktfuzz -n $n -s $seed at $ip1 (QPN ${qpn:-not found} and QP1) exits 0" \
	test $rc -eq 0 -a -n "$qpn"
# (the veth delivers in softirq, mostly before sendto returns)
until_ok 10 test "$(($(wire_sum) - sum0))" -ge $n
rcvd=$(($(counter rsoft_w1 wire_received_packets) - rcvd0))
icrc=$(($(counter rsoft_w1 wire_icrc_errors) - icrc0))
drop=$(($(counter rsoft_w1 wire_receive_drops) - drop0))
got=$((rcvd + icrc + drop))
check "rsoft_w1 counted $got of the $n packets (at least 90%): taken $rcvd, ICRC errors $icrc, dropped $drop" \
	test $((got * 10)) -ge $((n * 9)) -a $rcvd -gt 0 -a $icrc -gt 0 -a $drop -gt 0
rdma statistic show link rsoft_w1/1 | sed 's/^/# after pktfuzz: /'
crc=0 src=0
timeout -k 5 $T ibv_ud_pingpong -d rxe_w0 -g "$g0" -p $port -s 512 -n 100 -c $ip1 \
	>"$d/client" 2>&1 || crc=$?
wait $s || src=$?
name="then ibv_ud_pingpong -s 512 -n 100 -c -g with the QP under attack (rsoft_w1 in $ns <-> rxe_w0 here)"
if ((crc == 0 && src == 0)) && pp_done "$d"; then
	pass "$name"
else
	fail "$name (client $crc, server $src)"
	show "$d/client" client
	show "$d/server" server
fi
srv=(udaddy -b $ip0 -c 2 -C 10)
cli=(udaddy -s $ip0 -c 2 -C 10)
ns_pair "then udaddy -c 2 -C 10 (rsoft_w1 in $ns <-> rxe_w0 here): SIDR through the QP1 under attack" \
	cm 7174 cmatose_done

# --- g. RC between rsoft and rxe over a lossy veth (netem: 2% lost and 2%
# duplicated each way, a quarter reordered; see lossy_rc): every tool
# completes, rping with its data intact, with no RETRY_EXC at the default
# retry count, and rsoft sent packets again, answered duplicates and NAKed
# gaps.
if check "netem on w0 and w1: loss 2%, duplicate 2%, reorder 25%" lossy w0 w1 on; then
	c0=() names=(wire_resent_packets wire_duplicates wire_sequence_naks_sent)
	for c in "${names[@]}"; do c0+=("$(counter rsoft_w1 $c)"); done
	lossy_rc rxe_w0 "$g0" $ip0 rsoft_w1 "$g1" $ip1 7750
	for i in "${!names[@]}"; do
		d=$(($(counter rsoft_w1 ${names[i]}) - c0[i]))
		check "lossy: rsoft_w1's ${names[i]} went up ($d)" test $d -gt 0
	done
	check "netem off" lossy w0 w1 off
fi

# --- d. nothing left: links, veth, namespace, rdma_rxe
check "rdma link delete rsoft_w1" timeout $T ip netns exec $ns rdma link delete rsoft_w1
check "rdma link delete rxe_w0" timeout $T rdma link delete rxe_w0
check "ip link del w0 (and w1 with it)" ip link del w0
check "ip netns delete $ns" ip netns delete $ns
check "modprobe -r rdma_rxe" modprobe -r rdma_rxe
left() {
	rdma link | grep -Eq '(rxe_w0|rsoft_w1)/' || ip link show w0 >/dev/null 2>&1 ||
		ip netns list | grep -q "^$ns\b" || [[ -d /sys/module/rdma_rxe ]]
}
if ! left; then
	pass "nothing left: links, veth, namespace, rdma_rxe"
else
	fail "nothing left: links, veth, namespace, rdma_rxe"
	rdma link | sed 's/^/# /'
	ip netns list | sed 's/^/# /'
fi
echo "# wire.sh: $SECONDS s"
rm -rf "$work"
exit 0
