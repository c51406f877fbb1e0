#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench inside the guest (tools/bench.sh boots it with rsoft.ko
# loaded): the machine's limits, the kernel-side poll_cq cost, then the same
# perftest commands on rsoft0, on rxe0 and on siw0, one device at a time;
# then a few of them across a veth pair, as RoCEv2 packets (the wire rows).
# All of it runs BENCH_ROUNDS times (default 3; the wire rows in the last
# round only), one round after the other, so that a busy spell of the
# shared host falls on every device alike; each figure is the median of
# its rounds, one line "bench: PEER TEST VALUE UNIT" for the host (VALUE
# "failed" if no round gave one). Everything else is context for a person
# reading the log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The GID lookups and the veth between namespaces, as the wire tests make
# them, and the shell's own look for a listening TCP port (tap.sh's
# tcp_listening: no TAP line is printed here).
. "$here/../../selftests/tap.sh"
. "$here/../../selftests/roce-lib.sh"
limits=$here/build/limits
ip4=10.0.2.15	# QEMU user networking's guest address

# The perftest runs: "TEST|ARGS|KIND". KIND picks the figure from the
# client's result row: bw = BW average (MiB/s), rate = MsgRate (msg/s),
# lat = t_typical (usec). Counts, not durations (-D): the counts give rsoft a
# few hundred milliseconds a run, and the slowest peer (rxe) under 20 s on
# an idle host.
tests=(
	"write_bw_64k|ib_write_bw -s 65536 -n 5000|bw"
	"write_bw_1m|ib_write_bw -s 1048576 -n 300|bw"
	"read_bw_64k|ib_read_bw -s 65536 -n 5000|bw"
	"read_bw_1m|ib_read_bw -s 1048576 -n 300|bw"
	"write_bw_64k_q4|ib_write_bw -s 65536 -q 4 -n 2000|bw"
	"send_bw_64|ib_send_bw -s 64 -n 50000|rate"
	"write_bw_64|ib_write_bw -s 64 -n 50000|rate"
	"send_lat_2|ib_send_lat -s 2 -n 1000|lat"
	"write_lat_2|ib_write_lat -s 2 -n 1000|lat"
	"read_lat_2|ib_read_lat -s 2 -n 1000|lat"
)

# The wire rows: every packet crosses the stack and the veth, so wire
# bandwidth is far below the local one (tens of MB/s, as rxe's); these
# counts keep each run's transfer to a second or two, and the section to
# about 5 minutes (perftest's start costs the rest).
wire_tests=(
	"write_bw_64k|ib_write_bw -s 65536 -n 300|bw"
	"write_bw_1m|ib_write_bw -s 1048576 -n 30|bw"
	"read_bw_64k|ib_read_bw -s 65536 -n 300|bw"
	"read_bw_1m|ib_read_bw -s 1048576 -n 30|bw"
	"send_bw_64|ib_send_bw -s 64 -n 5000|rate"
	"send_lat_2|ib_send_lat -s 2 -n 500|lat"
)

declare -A units=([bw]=MB/s [rate]=msg/s [lat]=usec)
declare -A runs	# "PEER TEST UNIT" -> the figures of the rounds
order=()	# its keys, first seen first

# result PEER TEST VALUE UNIT: one round's figure.
result() {
	local key="$1 $2 $4"
	[[ -v runs[$key] ]] || order+=("$key")
	runs[$key]+="$3 "
	echo "# round $round: $*"
}

# run_pair PEER TEST KIND SERVER_ADDR TOOL ARGS...: one perftest run between
# two processes, the server with srv_args[] added, the client under
# cli_pre[] (another namespace) with cli_args[] added; sets figure.
run_pair() {
	local peer=$1 test=$2 kind=$3 addr=$4 port dir rc=0 server value
	figure=
	shift 4
	# Below the kernel's ephemeral ports (32768 on): a port that a client
	# socket of an earlier run left in TIME_WAIT refuses the listen.
	port=$((20000 + RANDOM % 12000))
	dir=$(mktemp -d)
	# Server on CPU 0, client on CPU 1: perftest times with the TSC, and
	# under TCG the vCPUs' TSCs disagree, so a process that migrates
	# reports 0, inf or nonsense.
	timeout "${pair_timeout:-300}" taskset -c 0 "$@" "${srv_args[@]}" -F -p "$port" \
		>"$dir/server" 2>&1 &
	server=$!
	# The client does not retry: wait until the server listens on its TCP
	# port (perftest's own exchange, or siw's socket under rdma_cm).
	for _ in $(seq 600); do
		tcp_listening "$port" && break
		kill -0 $server 2>/dev/null || break
		sleep 0.1
	done
	timeout "${pair_timeout:-300}" taskset -c 1 "${cli_pre[@]}" "$@" "${cli_args[@]}" \
		-F -p "$port" "$addr" >"$dir/client" 2>&1 || rc=$?
	wait $server || rc=$((rc ? rc : $?))
	# The row after perftest's "#bytes" header; the figure's column by kind.
	value=$(awk -v kind="$kind" '
		/^ *#bytes/ { row = 1; next }
		row && NF >= 5 {
			if (kind == "bw") v = $4
			else if (kind == "rate") v = $5 * 1000000
			else v = $5
			printf "%.6g\n", v; exit
		}' "$dir/client")
	# The client's own result row, for whoever checks a figure.
	grep -A1 '^ *#bytes' "$dir/client" | tail -1 | sed "s/^/# $peer $test: /"
	# perftest can print 0, inf or nan on a run gone wrong: a failure.
	if ((rc == 0)) && [[ $value =~ ^[0-9.e+-]+$ && $value != 0 ]]; then
		figure=$value
	else
		echo "# $peer $test failed (status $rc): $*"
		sed 's/^/# client: /' "$dir/client" | tail -${BENCH_TAIL:-20}
		sed 's/^/# server: /' "$dir/server" | tail -${BENCH_TAIL:-20}
		((rc)) || rc=1
	fi
	rm -rf "$dir"
	return $rc
}

# run_device PEER DEVICE ADDR EXTRA...: every test of tests[] on one device
# (none given: srv_args[] and cli_args[] name each side's).
run_device() {
	local peer=$1 dev=$2 addr=$3 t test args kind start=$SECONDS
	shift 3
	# BENCH_PEERS (a regex of peer names) trims a trial run too.
	[[ $peer =~ ${BENCH_PEERS:-.} ]] || return 0
	for t in "${tests[@]}"; do
		IFS='|' read -r test args kind <<<"$t"
		# BENCH_ONLY (a regex of test names) trims a trial run.
		[[ $test =~ ${BENCH_ONLY:-.} ]] || continue
		# A failed run is retried once (both are shown).
		for _ in $(seq "${tries:-2}"); do
			# shellcheck disable=SC2086 # args are words
			run_pair "$peer" "$test" "$kind" "$addr" $args ${dev:+-d "$dev"} "$@" && break
		done
		# A figure of no round is a row that says so, not a missing row.
		result "$peer" "$test" "${figure:-failed}" "${units[$kind]}"
	done
	echo "# $peer: $((SECONDS - start)) s"
}

srv_args=() cli_args=() cli_pre=()

# wire: the wire rows, RoCEv2 over a veth pair (see Documentation/rsoft.rst,
# "Benchmarks"). rsoft to rsoft: rsoft_v0 on v0 here, rsoft_v1 on v1 in
# namespace bench_ns, two hosts to rsoft. rsoft to rxe: rsoft_v1 the client
# (the requester), rxe0 on v0 the server; 6.12's rxe has its socket in
# init_net only, so rxe cannot be the one in the namespace. rxe to rxe:
# rxe_x0 and rxe_x1 on the two ends of a second veth pair, both here, over
# their IPv6 link-local GIDs: a route lookup bound to x0 skips x1's local
# address and the link-local route sends the packets through the veth
# (IPv4 would loop them through lo, where rxe takes nothing).
wire() {
	# (dynamic scope: run_device sees these)
	local tests=("${wire_tests[@]}") pair_timeout=45 ns=bench_ns
	local ip0=10.9.5.1 ip1=10.9.5.2 g0 g1 r0 x0 x1 start=$SECONDS
	local srv_args=() cli_args=() cli_pre=(ip netns exec $ns)
	# rxe's socket, when loaded, holds port 4791 here, and rsoft_v0 would
	# not receive.
	modprobe -r rdma_rxe
	if ! ip netns add $ns || ! veth_pair $ns v0 v1 $ip0 $ip1 ||
		! rdma link add rsoft_v0 type rsoft netdev v0 ||
		! ip netns exec $ns rdma link add rsoft_v1 type rsoft netdev v1; then
		echo "# wire: rsoft_v0 and rsoft_v1 could not be set up"
	fi
	# (The core adds GIDs from a work item.)
	for _ in $(seq 100); do
		g0=$(gid_index rsoft_v0 $ip0) && g1=$(gid_index rsoft_v1 $ip1) && break
		sleep 0.2
	done
	srv_args=(-d rsoft_v0 -x "${g0:-3}") cli_args=(-d rsoft_v1 -x "${g1:-3}")
	run_device wire_rsoft "" $ip0
	# RC under loss: the 64 KiB WRITEs and READs again with netem losing
	# 1% of the packets each way (the target: half the lossless figure).
	# Trains off: netem would lose a whole train, not one packet.
	if trains v0 off && trains v1 off $ns && tc qdisc add dev v0 root netem loss 1% &&
		ip netns exec $ns tc qdisc add dev v1 root netem loss 1%; then
		tests=("${wire_tests[0]}" "${wire_tests[2]}")
		run_device wire_rsoft_loss1 "" $ip0
		tests=("${wire_tests[@]}")
	else
		echo "# wire: netem could not be added"
	fi
	tc qdisc del dev v0 root 2>/dev/null
	ip netns exec $ns tc qdisc del dev v1 root 2>/dev/null
	trains v0 on && trains v1 on $ns
	rdma link delete rsoft_v0

	if modprobe rdma_rxe && rdma link add rxe0 type rxe netdev v0; then
		r0=$(gid_index rxe0 $ip0)
		srv_args=(-d rxe0 -x "${r0:-1}")
		run_device wire_rsoft_rxe "" $ip0
		rdma link delete rxe0
	else
		echo "# wire: rxe0 could not be added on v0"
	fi
	ip netns exec $ns rdma link delete rsoft_v1
	ip link del v0
	ip netns delete $ns

	cli_pre=()
	if ip link add x0 type veth peer name x1 && ip link set x0 up && ip link set x1 up &&
		rdma link add rxe_x0 type rxe netdev x0 && rdma link add rxe_x1 type rxe netdev x1; then
		for _ in $(seq 100); do
			x0=$(gid6_index rxe_x0) && x1=$(gid6_index rxe_x1) && break
			sleep 0.2
		done
		local tx=$(</sys/class/net/x1/statistics/tx_packets)
		srv_args=(-d rxe_x0 -x "${x0:-0}") cli_args=(-d rxe_x1 -x "${x1:-0}")
		run_device wire_rxe "" localhost
		# Evidence that the client's requests went through the veth.
		echo "# wire: x1 sent $(($(</sys/class/net/x1/statistics/tx_packets) - tx)) packets"
		rdma link delete rxe_x1
		rdma link delete rxe_x0
	else
		echo "# wire: rxe_x0 and rxe_x1 could not be added"
	fi
	ip link del x0
	echo "# wire: $((SECONDS - start)) s"
}

echo "# guest: $(uname -r), $(nproc) CPUs, $(ib_write_bw --version 2>&1 | head -1)"

ip addr add "$ip4/24" dev eth0
ip link set eth0 up
rounds=${BENCH_ROUNDS:-3}
for round in $(seq "$rounds"); do
	# --- the machine: one CPU's copy rate at the message sizes (glibc's
	# memcpy and a plain loop), null system calls
	for size in 65536 1048576; do
		result machine "memcpy_$size" "$(taskset -c 0 "$limits" memcpy $size)" MB/s
		result machine "copyloop_$size" "$(taskset -c 0 "$limits" loop $size)" MB/s
	done
	result machine null_syscall "$(taskset -c 0 "$limits" syscall)" calls/s
	# What the two CPUs copy at once: the ceiling of -q 4 over one QP.
	taskset -c 0 "$limits" loop 65536 >/tmp/copy0 &
	taskset -c 1 "$limits" loop 65536 >/tmp/copy1
	wait
	result machine copyloop2_65536 "$(($(cut -d. -f1 /tmp/copy0) + $(cut -d. -f1 /tmp/copy1)))" MB/s

	# --- rsoft's completion path in the kernel, without the system call;
	# its figures are the kernel log's lines since the load.
	seen=$(dmesg | wc -l)
	if insmod "$here/kmod/rsoft_pollcq.ko"; then
		rmmod rsoft_pollcq
	else
		echo "# rsoft_pollcq failed"
	fi
	# (Files, not a pipe or <(...): result() must run in this shell, and
	# the guest has no /dev/fd.)
	dmesg | tail -n +$((seen + 1)) > /tmp/pollcq.log
	sed -n 's/.*rsoft_pollcq: bench \([^ ]*\) \([^ ]*\) \(.*\)/\1 \2 \3/p' \
		/tmp/pollcq.log > /tmp/pollcq.figures
	while read -r name value unit; do
		result kernel "$name" "$value" "$unit"
	done < /tmp/pollcq.figures
	grep 'rsoft_pollcq: .*ok 1' /tmp/pollcq.log | sed 's/^/# /'

	# --- rsoft: its own fabric; perftest exchanges QP numbers over TCP
	run_device rsoft rsoft0 localhost

	# --- rxe over the guest's NIC; without IPv6 its IPv4 GID is index 1
	if modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0; then
		ibv_devinfo -v -d rxe0 | grep -E 'GID\[ *[01]\]' | sed 's/^/# rxe0 /'
		run_device rxe rxe0 localhost -x 1
		rdma link delete rxe0
	else
		echo "# rxe0 could not be added"
	fi

	# --- siw: iWARP connects through rdma_cm only (-R), to the NIC's
	# address. rxe0 is gone by now: the address resolves to siw0 alone.
	if modprobe siw && rdma link add siw0 type siw netdev eth0; then
		run_device siw siw0 "$ip4" -R
		rdma link delete siw0
	else
		echo "# siw0 could not be added"
	fi

	# Its perftest runs cost seconds each to start under TCG: a round of
	# them takes minutes, so only the last BENCH_WIRE_ROUNDS (default 1)
	# rounds have one.
	if [[ wire =~ ${BENCH_PEERS:-.} ]] && ((round > rounds - ${BENCH_WIRE_ROUNDS:-1})); then
		wire
	fi
done

# The median of each figure's rounds that gave one.
for key in "${order[@]}"; do
	read -r peer test unit <<<"$key"
	read -ra figs <<<"${runs[$key]}"
	echo "# $peer $test rounds: ${figs[*]}"
	printf '%s\n' "${figs[@]}" | grep -v '^failed$' | sort -g >/tmp/rounds
	mapfile -t ok </tmp/rounds
	median=failed
	((${#ok[@]})) && median=${ok[(${#ok[@]} - 1) / 2]}
	echo "bench: $peer $test $median $unit"
done
echo "# bench done"
