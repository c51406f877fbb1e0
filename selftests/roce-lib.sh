# SPDX-License-Identifier: GPL-2.0
# Sourced by the RoCE test scripts after tap.sh: finding a port's GID, and
# running a stock client/server tool as a pair of processes and judging
# their output. The caller sets T (the bound of every command) and work (a
# directory for the outputs).

# gid_index DEV ADDR: the index of the RoCE v2 GID that holds IPv4 address
# ADDR on DEV's port (the core places GIDs where it finds room).
gid_index() {
	local p=/sys/class/infiniband/$1/ports/1 want g
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	# One grep over the table: rxe's has 1024 entries.
	for g in $(grep -lx "$want" "$p"/gids/* 2>/dev/null); do
		[[ $(cat "$p/gid_attrs/types/${g##*/}" 2>/dev/null) == "RoCE v2" ]] || continue
		echo "${g##*/}"
		return 0
	done
	return 1
}

# gid6_index DEV: the index of the RoCE v2 GID of DEV's link-local IPv6
# address.
gid6_index() {
	local p=/sys/class/infiniband/$1/ports/1 g
	for g in $(grep -l '^fe80:' "$p"/gids/* 2>/dev/null); do
		[[ $(cat "$p/gid_attrs/types/${g##*/}" 2>/dev/null) == "RoCE v2" ]] || continue
		echo "${g##*/}"
		return 0
	done
	return 1
}

# veth_pair NS D0 D1 IP0 IP1: a veth pair between this namespace and NS,
# D0 here with IP0/24 and D1 there with IP1/24, both up (and NS's lo).
veth_pair() {
	ip link add "$2" type veth peer name "$3" &&
		ip link set "$3" netns "$1" &&
		ip addr add "$4/24" dev "$2" && ip link set "$2" up &&
		ip netns exec "$1" ip addr add "$5/24" dev "$3" &&
		ip netns exec "$1" ip link set "$3" up &&
		ip netns exec "$1" ip link set lo up
}

# two_links NS TYPE0 LINK0 NETDEV0 IP0 LINK1 NETDEV1 IP1: link LINK0 of
# TYPE0 on NETDEV0 here and rsoft link LINK1 on NETDEV1 in NS (added from
# there, where its netdev is); sets g0 and g1 to their RoCE v2 GIDs of IP0
# and IP1 (1 when not found).
two_links() {
	local ns=$1 t0=$2 l0=$3 n0=$4 a0=$5 l1=$6 n1=$7 a1=$8
	check "rdma link add $l0 (this namespace)" \
		timeout "$T" rdma link add "$l0" type "$t0" netdev "$n0"
	check "rdma link add $l1 (in $ns, on its netdev there)" \
		timeout "$T" ip netns exec "$ns" rdma link add "$l1" type rsoft netdev "$n1"
	g0= g1=
	until_ok 20 gid_index "$l0" "$a0" >/dev/null && g0=$(gid_index "$l0" "$a0")
	until_ok 20 gid_index "$l1" "$a1" >/dev/null && g1=$(gid_index "$l1" "$a1")
	if [[ -n $g0 && -n $g1 ]]; then
		pass "RoCE v2 GIDs of $a0 on $l0 ($g0) and of $a1 on $l1 ($g1)"
	else
		fail "RoCE v2 GIDs of $a0 on $l0 and of $a1 on $l1"
		g0=1 g1=1
	fi
}

# show FILE LABEL: FILE as "# LABEL: " lines, its head and tail if long.
show() {
	[[ -s $1 ]] || return 0
	tr -d '\r' <"$1" | awk -v p="# $2: " '
		NR <= 20 { print p $0 }
		{ line[NR] = $0 }
		END {
			from = NR - 40 > 20 ? NR - 40 : 20
			if (from > 20) print p "... (" from - 20 " lines)"
			for (i = from + 1; i <= NR; i++) print p line[i]
		}'
}
# The servers do not tell when they listen: look for their rdma_cm ID or
# TCP socket. A server that died is not waited for (the client then fails
# and both outputs show why).
# (The shell matches the output itself: a grep per look would cost the
# debug TCG guest another half second.)
cm_listening() { # PORT [NS]
	local out nl=$'\n'
	out=$(${2:+ip netns exec "$2"} rdma res show cm_id 2>/dev/null)
	[[ $out =~ state\ LISTEN\ [^$nl]*src-addr\ [^\ $nl]*:$1\  ]]
}
# an rdma_cm server in namespace $ns
ns_cm_listening() { cm_listening "$1" "$ns"; }
# a TCP server in namespace $ns
ns_tcp_listening() {
	ip netns exec "$ns" grep -q "$(printf ':%04X ' "$1").* 0A " /proc/net/tcp /proc/net/tcp6
}
listening() { # KIND PORT PID
	kill -0 "$3" 2>/dev/null || return 0
	"$1_listening" "$2"
}

# pair NAME KIND PORT [CHECK]: the server command srv[] in the background;
# once it listens (KIND cm or tcp, on PORT) the client command cli[]. Both
# must exit 0 and CHECK (a function given their output directory) pass.
pair() {
	local name=$1 kind=$2 port=$3 chk=${4:-true} d s crc src t0=$SECONDS try
	d=$work/${name//[^A-Za-z0-9_.-]/_}
	mkdir -p "$d"
	for try in 1 2; do
		crc=0 src=0
		timeout -k 5 $T "${srv[@]}" >"$d/server" 2>"$d/server.err" &
		s=$!
		until_ok 60 listening "$kind" "$port" "$s"
		timeout -k 5 $T "${cli[@]}" >"$d/client" 2>"$d/client.err" || crc=$?
		if ((try == 1)) && perftest_cm_race "$d" "$crc"; then
			echo "# $name: perftest's client was rejected and crashed retrying; once more"
			kill "$s"
			wait "$s"
			continue
		fi
		wait "$s" || src=$?
		break
	done
	if ((crc == 0 && src == 0)) && "$chk" "$d"; then
		pass "$name"
		echo "# $name: $((SECONDS - t0)) s"
	else
		fail "$name (client $crc, server $src)"
		echo "# server: ${srv[*]}"
		echo "# client: ${cli[*]}"
		show "$d/client" client
		show "$d/client.err" "client stderr"
		show "$d/server" server
		show "$d/server.err" "server stderr"
	fi
}

# perftest_cm_race DIR RC: perftest -R's client connected before its
# server listened for the test's QPs (it listens again after their first
# exchange), was rejected (reason 8: no listener), and crashed (RC 139)
# in perftest's retry, which until upstream's 3d9d8d0 uses the CM IDs it
# has just destroyed: the race and the crash are perftest's own.
perftest_cm_race() {
	(($2 == 139)) && grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$1/client.err"
}

# What the tools print when they did their job, for pair's CHECK.
# rping -v prints the data each round trip brought back: "ping data:
# rdma-ping-N: " and then letters from 'A'+N, cycling through 'A'..'z'.
rping_data() { # DIR COUNT
	awk -v n="$2" '
		/^ping data: / {
			s = substr($0, 12)
			want = sprintf("rdma-ping-%d: ", i)
			for (c = 65 + i % 58; length(want) < length(s); c = c < 122 ? c + 1 : 65)
				want = want sprintf("%c", c)
			if (s != want) { print "# line " i ": " s " != " want; bad++ }
			i++
		}
		END { if (i != n) print "# " i " ping data lines, want " n; exit bad || i != n }
	' "$1/client"
}
# ns_pair NAME KIND PORT CHECK: pair, with the server here and the client
# cli[] in namespace $ns.
ns_pair() {
	cli=(ip netns exec "$ns" "${cli[@]}")
	pair "$@"
}

# perftests D0 G0 IP0 D1 G1 IP1 PORT: each of perftest's tests (SEND,
# WRITE, READ and atomic; bandwidth and latency) between D0 here (address
# IP0, GID index G0) and D1 in $ns (IP1, G1) twice: D1 the client with the
# QPs exchanged over TCP on the GIDs (-x), and D0 the client over rdma_cm
# (-R). So each test runs each way, with and without -R: 16 runs of 20
# iterations, each run's row checked. (All four pairings of the two would
# double the time, perftest's start being most of it, for no path not
# taken here.) Uses ports PORT to PORT+15.
perftests() {
	local d0=$1 g0=$2 ip0=$3 d1=$4 g1=$5 ip1=$6 port=$7 t
	for t in send_bw send_lat write_bw write_lat read_bw read_lat atomic_bw atomic_lat; do
		srv=(ib_$t -d "$d0" -x "$g0" -F -n 20 -p $port)
		cli=(ib_$t -d "$d1" -x "$g1" -F -n 20 -p $port "$ip0")
		ns_pair "ib_$t -x -n 20 ($d1 in $ns -> $d0 here)" tcp $port perf_row
		port=$((port + 1))
		srv=(ip netns exec "$ns" ib_$t -d "$d1" -R -F -n 20 -p $port)
		cli=(ib_$t -d "$d0" -R -F -n 20 -p $port "$ip1")
		pair "ib_$t -R -n 20 ($d0 here -> $d1 in $ns)" ns_cm $port perf_row
		port=$((port + 1))
	done
}

# librpma's check (selftests/rpma) verified every operation, its server
# on device $rpma_srv and its client on $rpma_cli.
rpma_ok() {
	grep -q "^server: device $rpma_srv$" "$1/server" &&
		grep -q "^client: device $rpma_cli$" "$1/client" &&
		grep -q '^server: all verified' "$1/server" &&
		grep -q '^client: all verified' "$1/client"
}
cmatose_done() { grep -q 'data transfers complete' "$1/client" && grep -q 'data transfers complete' "$1/server"; }
perf_row() { grep -A1 '^ *#bytes' "$1/client" | tail -1 | grep -Eq '^ *[0-9]+ +[0-9]+ '; }
pp_done() { grep -q 'iters in' "$1/client" && grep -q 'iters in' "$1/server"; }
fi_row() { grep -Eq '^4k +100 +=100 ' "$1/client" && grep -Eq '^4k +100 +=100 ' "$1/server"; }

# trains DEV on|off|N [NS]: whether rsoft sends runs of packets out of
# DEV (in NS if given) as one skb that the stack cuts apart (UDP GSO, at
# most gso_max_segs packets, N); off, tc and tcpdump on DEV see each one.
trains() {
	local segs=$2 n=()
	[[ $2 == on ]] && segs=65535
	[[ $2 == off ]] && segs=1
	[[ -n ${3-} ]] && n=(ip netns exec "$3")
	"${n[@]}" ip link set dev "$1" gso_max_segs "$segs"
}

# gso_segs DEV [NS]: DEV's gso_max_segs (in NS if given).
gso_segs() {
	local n=()
	[[ -n ${2-} ]] && n=(ip netns exec "$2")
	"${n[@]}" ip -d link show dev "$1" | grep -o 'gso_max_segs [0-9]*' | cut -d' ' -f2
}

# shape D0 D1 DEFAULT NETEM [MATCH... --]...: on both ends of the veth
# between D0 here and D1 in $ns, a prio qdisc whose band 1:1 passes
# packets as they come and whose band 1:2 puts them through netem NETEM
# (one word); a packet goes to band DEFAULT (1 or 2) unless it is RoCEv2
# (UDP 4791) and matches the u32 MATCH list of a filter, each list
# ending in "--" and the band it sends to, in order of priority. Band 1:3
# passes packets as they come too, for band_sent to count. Trains
# are off meanwhile, so that the filters and netem see every packet.
# "shape D0 D1 off" takes it away, and puts trains back as they were.
declare -gA shape_segs
shape() {
	local d n=() in= netem=${4-} prio filters rc
	for d in "$1" "$2"; do
		[[ $d == "$2" ]] && n=(ip netns exec "$ns") in=$ns
		if [[ $3 == off ]]; then
			"${n[@]}" tc qdisc del dev "$d" root
			rc=$?
			trains "$d" "${shape_segs[$d]:-on}" $in && ((rc == 0)) || return
			continue
		fi
		shape_segs[$d]=$(gso_segs "$d" $in)
		trains "$d" off $in &&
			"${n[@]}" tc qdisc add dev "$d" root handle 1: prio bands 3 \
				priomap $(printf "$(($3 - 1)) %.0s" {1..16}) &&
			"${n[@]}" tc qdisc add dev "$d" parent 1:2 handle 2: netem $netem ||
			return
		prio=1 filters=("${@:5}")
		while ((${#filters[@]})); do
			local i=0
			while [[ ${filters[i]} != -- ]]; do i=$((i + 1)); done
			"${n[@]}" tc filter add dev "$d" parent 1: protocol ip prio $prio u32 \
				match ip protocol 17 0xff match ip dport 4791 0xffff \
				"${filters[@]:0:i}" flowid "1:${filters[i + 1]}" || return
			filters=("${filters[@]:i+2}") prio=$((prio + 1))
		done
	done
}

# band_sent DEV [NS]: the packets that left DEV (in NS if given) through
# band 1:3 of shape's qdisc.
band_sent() {
	local n=()
	[[ -n ${2-} ]] && n=(ip netns exec "$2")
	"${n[@]}" tc -s class show dev "$1" classid 1:3 | grep -o 'Sent [0-9]* bytes [0-9]* pkt' |
		cut -d' ' -f4
}

# lossy D0 D1 on|off: netem on both ends of the veth between D0 here and
# D1 in $ns: 2% of the packets lost and 2% duplicated each way, and a
# quarter sent ahead of the rest, which wait 1 ms (reordered). QP1's
# packets (BTH destination QP 1: the CM's MADs) pass clean: rdma_cm's
# users destroy their ID right after rdma_disconnect(), which cancels the
# DREQ's retries, so a lost DREQ would leave the peer waiting for
# DISCONNECTED for ever, on any device. The RC QPs' reliability is what is
# under test.
lossy() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 2 "loss 2% duplicate 2% delay 1ms reorder 25% 50%" \
		match u32 0x00000001 0x00ffffff at 32 -- 1
}

# sparse_acks D0 D1 on|off: every RC ACK (BTH opcode 0x11) on the veth
# between D0 here and D1 in $ns is dropped, but those whose PSN ends in
# 31 (mod 32).
sparse_acks() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 1 "loss 100%" \
		match u8 0x11 0xff at 28 match u32 0x1f 0x1f at 36 -- 1 \
		match u8 0x11 0xff at 28 -- 2
}

# late_seq_naks D0 D1 on|off: every sequence-error NAK (BTH opcode 0x11,
# AETH syndrome 0x60) on the veth between D0 here and D1 in $ns is
# delayed by 20 ms, far past the 0.64 ms RNR timer of the QPs that
# loopback.h connects.
late_seq_naks() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 1 "delay 20ms" \
		match u8 0x11 0xff at 28 match u8 0x60 0xff at 40 -- 2
}

# lost_first N D0 D1 on|off FILTERS...: on the veth between D0 here and
# D1 in $ns, the first N packets that leave each end and match one of
# shape's FILTERS (each "MATCH... -- 2") are lost, and the rest pass: N
# netem qdiscs, each inside the one before, each lose the first packet
# they see. "off" leaves in first_drops how many the innermost ones lost
# (empty if that cannot be read).
lost_first() {
	local n=$1 once="loss state 100% 0% 100% 0% 0%" d in h drops sum=0
	shift
	if [[ $3 == off ]]; then
		for d in "$1" "$2"; do
			in=()
			[[ $d == "$2" ]] && in=(ip netns exec "$ns")
			drops=$("${in[@]}" tc -s qdisc show dev "$d" |
				awk -v q="qdisc netem $((n + 1)):" 'index($0, q) == 1 {
					getline; sub(/.*dropped /, ""); sub(/,.*/, ""); print; exit }')
			[[ $drops =~ ^[0-9]+$ && -n $sum ]] && sum=$((sum + drops)) || sum=
		done
		first_drops=$sum
		shape "$1" "$2" off
		return
	fi
	shape "$1" "$2" 1 "$once" "${@:4}" || return
	for ((h = 3; h <= n + 1; h++)); do
		for d in "$1" "$2"; do
			in=()
			[[ $d == "$2" ]] && in=(ip netns exec "$ns")
			"${in[@]}" tc qdisc add dev "$d" parent $((h - 1)):1 handle $h: netem $once ||
				{ shape "$1" "$2" off; return 1; }
		done
	done
}

# send_lost_twice D0 D1 on|off: lost_first 2 of the RC SEND ONLY packet
# (BTH opcode 0x04) with PSN 0xffffe1, the second SEND of window.c's first
# batch: it is lost, and lost again when sent again.
send_lost_twice() {
	lost_first 2 "$@" match u8 0x04 0xff at 28 match u32 0xffffe1 0xffffff at 36 -- 2
}

# send_and_nak_lost D0 D1 on|off: lost_first 1 of that SEND and of the
# sequence-error NAKs (BTH opcode 0x11, AETH syndrome 0x60). window.c
# sends one way and then the other: D0 loses the SEND, D1 the NAK that
# the SEND after it brings.
send_and_nak_lost() {
	lost_first 1 "$@" match u8 0x04 0xff at 28 match u32 0xffffe1 0xffffff at 36 -- 2 \
		match u8 0x11 0xff at 28 match u8 0x60 0xff at 40 -- 2
}

# read_middle_lost_twice D0 D1 on|off: lost_first 2 of the READ response
# packets (MIDDLE, BTH opcode 0x0e; sent again by rsoft alone, ONLY 0x10)
# with PSN 0x000021, the second of window.c's first READ (the SENDs take
# PSNs 2^24 - 32 on, the WRITEs 0 to 31, the READs 32 on, four each). The
# READ asked for again has that PSN too, and passes.
read_middle_lost_twice() {
	local psn=(match u32 0x000021 0xffffff at 36)
	lost_first 2 "$@" match u8 0x0e 0xff at 28 "${psn[@]}" -- 2 \
		match u8 0x10 0xff at 28 "${psn[@]}" -- 2
}

# lost_atomic_answers D0 D1 on|off: 15% of the atomic answers (BTH opcode
# 0x12) on the veth between D0 here and D1 in $ns are lost.
lost_atomic_answers() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 1 "loss 15%" match u8 0x12 0xff at 28 -- 2
}

# late_read_first_write D0 D1 on|off: on the veth between D0 here and D1
# in $ns, every READ response ONLY packet (BTH opcode 0x10) and every
# RDMA WRITE ONLY (0x0a) with PSN 0xffffe1 (the second request of
# window.c's readack) are 20 ms late, and every ACK or NAK (0x11) with
# PSN 0xffffe0 (the READ's) goes through band 1:3. "off" leaves the
# number of those in read_acks (empty if it cannot be read).
late_read_first_write() {
	if [[ $3 == off ]]; then
		local here there
		here=$(band_sent "$1") there=$(band_sent "$2" "$ns")
		read_acks=
		[[ -n $here && -n $there ]] && read_acks=$((here + there))
		shape "$1" "$2" off
		return
	fi
	shape "$1" "$2" 1 "delay 20ms" \
		match u8 0x10 0xff at 28 -- 2 \
		match u8 0x0a 0xff at 28 match u32 0xffffe1 0xffffff at 36 -- 2 \
		match u8 0x11 0xff at 28 match u32 0xffffe0 0xffffff at 36 -- 3
}

# counter LINK NAME: the value of port counter NAME of LINK, from sysfs
# (the tests read hundreds: rdma statistic's three processes each cost
# the TCG guest minutes in all).
counter() {
	local f=/sys/class/infiniband/$1/ports/1/hw_counters/$2
	[[ -r $f ]] && echo "$(<"$f")"
}

# lost_read_middles D0 D1 on|off: every READ response MIDDLE packet (BTH
# opcode 0x0e) whose PSN is 1 (mod 4) on the veth between D0 here and D1
# in $ns is lost.
lost_read_middles() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 1 "loss 100%" \
		match u8 0x0e 0xff at 28 match u32 0x1 0x3 at 36 -- 2
}

# lost_uc_parts D0 D1 on|off: on the veth between D0 here and D1 in $ns,
# every UC SEND_MIDDLE packet (BTH opcode 0x21) whose PSN is 1 (mod 16)
# is lost, and every UC SEND_LAST_WITH_IMMEDIATE (0x23) whose PSN is 7.
lost_uc_parts() {
	[[ $3 == off ]] && { shape "$1" "$2" off; return; }
	shape "$1" "$2" 1 "loss 100%" \
		match u8 0x21 0xff at 28 match u32 0x1 0xf at 36 -- 2 \
		match u8 0x23 0xff at 28 match u32 0x7 0xf at 36 -- 2
}

# shaped PROG SHAPER WHAT MODE NAME D0 G0 D1 G1 DEV0 DEV1: check NAME is
# selftests/wire/PROG MODE between D0's GID G0 and D1's G1, while SHAPER
# (what WHAT says) is on the veth DEV0-DEV1.
shaped() {
	local out rc=0
	check "$3: on ${10} and ${11}" "$2" "${10}" "${11}" on || return
	out=$(timeout -k 5 $T "$(dirname "${BASH_SOURCE[0]}")/build/wire/$1" "${@:6:4}" ${4:+"$4"} 2>&1) ||
		rc=$?
	check "$3: off" "$2" "${10}" "${11}" off
	grep -v 'data intact$' <<<"$out"
	check "$5" test $rc -eq 0
}
shaped_window() { shaped window "$@"; }

# uc_loss D0 G0 D1 G1 DEV0 DEV1: selftests/wire/ucloss from D0's GID G0
# to D1's G1 (an rsoft link), with its receives on the QP and then on an
# SRQ, while lost_uc_parts loses a packet of 17 of the 49 messages on the
# veth DEV0-DEV1: only those are lost, the UC QP stays ready, and the
# receive of the last one lost is flushed or completes in error. The
# packets that came after a lost one of their message, which D1 drops,
# count in its wire_receive_drops.
uc_loss() {
	local how drops
	for how in "" srq; do
		drops=$(counter "$3" wire_receive_drops)
		shaped ucloss lost_uc_parts "UC SENDs' middle or last packets lost" "$how" \
			"49 UC SENDs $1 -> $3${how:+ (SRQ)}, 17 lose a packet: the others arrive whole, the QP stays in RTS" "$@"
		drops=$(($(counter "$3" wire_receive_drops) - drops))
		check "... $3 counted the packets after a lost one as dropped ($drops)" \
			test $drops -ge 16
	done
}

# misfits D0 G0 D1 G1 DEV0 DEV1: selftests/wire/misfit from D0's GID G0
# to D1's G1 (an rsoft link), the veth DEV0-DEV1 (DEV1 in $ns) at MTU
# 9000 meanwhile: D1 refuses every packet longer than its path MTU (1024)
# and takes nothing of it, UC loses what does not fit and goes on, and D1
# counts what it drops.
misfits() {
	local out rc=0 m0 m1
	m0=$(<"/sys/class/net/$5/mtu") m1=$(ip netns exec "$ns" cat "/sys/class/net/$6/mtu")
	veth_mtus "$5" 9000 "$6" 9000 &&
		out=$(timeout -k 5 $T "$(dirname "${BASH_SOURCE[0]}")/build/wire/misfit" "${@:1:4}" 2>&1) ||
		rc=$?
	echo "$out"
	check "requests that do not fit $3, from $1: refused, nothing placed, drops counted" \
		test $rc -eq 0
	check "... MTUs of $5 and $6 back to $m0 and $m1" veth_mtus "$5" "$m0" "$6" "$m1"
}

# veth_mtus D0 M0 D1 M1: the MTU of D0 here M0, of D1 in $ns M1.
veth_mtus() {
	ip link set "$1" mtu "$2" && ip netns exec "$ns" ip link set "$3" mtu "$4"
}

# window D0 G0 D1 G1 DEV0 DEV1: selftests/wire/window between D0's GID
# G0 and D1's G1, each way, while sparse_acks drops every ACK on the veth
# DEV0-DEV1 but the last of each 32 PSNs: 32 requests of each kind in
# flight, posted as one list, which the ACK of the last answers (or 8
# READs and 32 atomics, 4 at a time, answered by their data), every
# batch's data checked. The rsoft links sent nothing again. Then, with
# every ACK through but the sequence-error NAKs late, 32 SENDs each way
# for one receive posted. Then D1 (an rsoft link) READs from D0 with a
# packet of each READ's response lost and no local ACK timeout; from an
# rsoft D0 also a READ longer than the PSNs a requester notes. Then, from
# D0, a READ and two WRITEs, the READ's response and the first WRITE
# late: D1 NAKs the gap and ACKs no READ's PSN. Between two rsoft
# links, the batches again with one SEND lost twice (NAKed both times),
# and again with a READ response packet lost, and lost again when the
# READ asks for it again, and again with a SEND lost and the NAK of its
# gap lost too: no local ACK timeout. Then 32 fetch-and-adds
# each way with 15% of their answers lost.
window() {
	local links=() l before=() i
	for l in "$1" "$3"; do [[ $l == rsoft* ]] && links+=("$l"); done
	for l in "${links[@]}"; do before+=("$(counter "$l" wire_resent_packets)"); done
	shaped_window sparse_acks "sparse ACKs: only PSNs ending in 31 (mod 32) acknowledged" "" \
		"32 RC requests in flight, $1 <-> $3, answered by coalesced ACKs, data checked" "$@"
	for i in "${!links[@]}"; do
		l=$(($(counter "${links[i]}" wire_resent_packets) - before[i]))
		check "... ${links[i]} sent nothing again (resent $l)" test $l -eq 0
	done
	# 32 SENDs for one receive: an RNR NAK and a sequence-error NAK after
	# it (from rxe), which late_seq_naks holds back until the RNR timer
	# has run out and the SENDs have been sent again: the requester waits
	# the RNR timer out and takes the late NAK for the refusal's.
	shaped_window late_seq_naks "sequence-error NAKs 20 ms late" rnr \
		"32 SENDs in flight for 1 receive, $1 <-> $3: RNR NAK, then all complete" "$@"
	# A requester that waits for its local ACK timeout to ask again for a
	# READ response packet lost never completes the last READ; one that
	# asks for the whole rest of the READ never completes it from rxe.
	# rxe's replay of a READ asked for from its middle leads with a MIDDLE
	# packet, which the filter may drop every time: the long READ, which
	# is asked for whole, only from rsoft.
	local mode=readgap long=
	[[ $1 == rsoft* ]] && mode=readgaplong long=", and one of 160 packets"
	shaped_window lost_read_middles "READ responses' second packets lost" $mode \
		"8 READs from $3$long, every fourth response packet lost, no local ACK timeout: all complete" "$@"
	# A sequence-error NAK right after a READ: an ACK of the READ's PSN
	# before it had rxe's requester complete the READ with no data.
	read_acks=
	shaped_window late_read_first_write "READ responses and a WRITE 20 ms late" readack \
		"a READ and two WRITEs $1 -> $3, the first WRITE late: data intact" "$@"
	check "... $3 NAKed the gap after the READ without an ACK of the READ's PSN (sent ${read_acks:-?})" \
		test "${read_acks:-1}" -eq 0
	# A request lost again when sent after a sequence-error NAK: the
	# responder NAKs it again (two NAKs each way), where silence left the
	# requester to its local ACK timeout (about 1 s here). A READ response
	# packet lost, and its answer to the READ asked for again lost too: the
	# requester asked twice. A SEND lost, and the NAK of the gap lost too:
	# the requester sends again at an eighth of its local ACK timeout (a
	# probe), where it waited for the whole. Between rsoft links only:
	# rxe's responder keeps silent, and rxe's requester acts on no second
	# NAK, asks again for a READ after its timeout, and sends no probe.
	if [[ $1 == rsoft* && $3 == rsoft* ]]; then
		twice_lost send_lost_twice "a SEND lost, and lost again when sent again" \
			"one SEND lost twice" 0 "$@"
		twice_lost read_middle_lost_twice \
			"a READ response packet lost, and lost again when asked for again" \
			"one READ response packet lost twice" 0 "$@"
		twice_lost send_and_nak_lost "a SEND lost, and the NAK of the gap lost" \
			"one SEND and the NAK of it lost" 1 "$@"
	fi
	# An atomic asked for again after those behind it ran: one result kept
	# (the newest) left it unanswered until RETRY_EXC.
	shaped_window lost_atomic_answers "atomic answers lost (15%)" atomics \
		"32 fetch-and-adds each way, $1 <-> $3, answers lost: each executed once, all complete" "$@"
}

# counters NAME LINK...: the sum of port counter NAME of the LINKs.
counters() {
	local l sum=0
	for l in "${@:2}"; do sum=$((sum + $(counter "$l" "$1"))); done
	echo $sum
}

# naks_lost LINK...: the NAKs the LINKs sent one another and never
# received.
naks_lost() {
	echo $(($(counters wire_sequence_naks_sent "$@") -
		$(counters wire_sequence_naks_received "$@")))
}

# twice_lost SHAPER TITLE WHAT NAKS D0 G0 D1 G1 DEV0 DEV1: window.c's
# batches between D0 and D1 (rsoft links) while SHAPER (a lost_first)
# loses packets: its innermost netems must have lost two, NAKS of them
# sequence-error NAKs (sent, never received), and no local ACK timeout
# may have run out.
twice_lost() {
	local shaper=$1 title=$2 what=$3 naks=$4 t n
	shift 4
	t=$(counters local_ack_timeouts "$1" "$3") n=$(naks_lost "$1" "$3")
	first_drops=
	shaped_window "$shaper" "$title" "" "RC requests $1 <-> $3, $what: data intact" "$@"
	t=$(($(counters local_ack_timeouts "$1" "$3") - t)) n=$(($(naks_lost "$1" "$3") - n))
	check "... losses: ${first_drops:-?} (2), NAKs among them: $n ($naks), local ACK timeouts: $t (none)" \
		test "${first_drops:-0}" -eq 2 -a $n -eq "$naks" -a $t -eq 0
}

# lossy_rc D0 G0 IP0 D1 G1 IP1 PORT: RC between device D0 here (address
# IP0, GID index G0) and D1 in $ns (IP1, G1) through lossy's veth: rping
# from there, whose server READs the client's buffer and WRITEs it back,
# every round trip's data checked; 64 KiB WRITEs and READs from there and
# SENDs from here (64 packets a message, most of which lose one). (Not the
# RC pingpong: it has no closing handshake, so when the ACK of its last
# SEND is lost, the peer has already destroyed the QP that would ACK it
# again, and the sender ends in RETRY_EXC, on any device.) Uses ports
# PORT to PORT+3.
lossy_rc() {
	local d0=$1 g0=$2 ip0=$3 d1=$4 g1=$5 ip1=$6 port=$7 t
	srv=(rping -s -a "$ip0" -p $port -C 50)
	cli=(rping -c -a "$ip0" -p $port -C 50 -v -V)
	ns_pair "lossy: rping -C 50 -v -V ($d1 in $ns -> $d0 here)" cm $port rping_data_50
	for t in ib_write_bw ib_read_bw; do
		port=$((port + 1))
		srv=($t -d "$d0" -x "$g0" -F -s 65536 -n 50 -p $port)
		cli=($t -d "$d1" -x "$g1" -F -s 65536 -n 50 -p $port "$ip0")
		ns_pair "lossy: $t -s 65536 -n 50 ($d1 in $ns -> $d0 here)" tcp $port perf_row
	done
	port=$((port + 1))
	srv=(ip netns exec "$ns" ib_send_bw -d "$d1" -x "$g1" -F -s 65536 -n 50 -p $port)
	cli=(ib_send_bw -d "$d0" -x "$g0" -F -s 65536 -n 50 -p $port "$ip1")
	pair "lossy: ib_send_bw -s 65536 -n 50 ($d0 here -> $d1 in $ns)" ns_tcp $port perf_row
	psn_wrap "lossy: " "$d0" "$g0" "$d1" "$g1"
}

# psn_wrap PREFIX D0 G0 D1 G1: selftests/wire/psnwrap between D0's GID G0
# and D1's G1, each way: WRITEs, READs and SENDs of 64 packets whose PSNs
# (and their answers') cross 2^24, every one's data checked.
psn_wrap() {
	local out rc=0
	out=$(timeout -k 5 $T "$(dirname "${BASH_SOURCE[0]}")/build/wire/psnwrap" "${@:2}" 2>&1) ||
		rc=$?
	grep -v 'data intact$' <<<"$out"
	if ((rc == 0)); then
		pass "${1}RC across the PSN wrap, $2 <-> $4: WRITE, READ, SEND, data checked"
	else
		fail "${1}RC across the PSN wrap, $2 <-> $4: WRITE, READ, SEND, data checked"
	fi
}
rping_data_50() { rping_data "$1" 50; }
rping_data_1000() { rping_data "$1" 1000; }
