#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench inside the guest (tools/bench.sh boots it with rsoft.ko
# loaded): the machine's limits, the kernel-side poll_cq cost, then the same
# perftest commands on rsoft0, on rxe0 and on siw0, one device at a time.
# All of it runs BENCH_ROUNDS times (default 3), one round after the other,
# so that a busy spell of the shared host falls on every device alike; each
# figure is the median of its rounds, one line "bench: PEER TEST VALUE UNIT"
# for the host. Everything else is context for a person reading the log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
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

# The client does not retry: wait until the server listens on its TCP port
# (perftest's own exchange, or siw's listening socket under rdma_cm).
listening() {
	grep -q "$(printf ':%04X ' "$1").* 0A " /proc/net/tcp
}

# run_pair PEER TEST KIND SERVER_ADDR TOOL ARGS...: one perftest run between
# two processes; sets figure.
run_pair() {
	local peer=$1 test=$2 kind=$3 addr=$4 port dir rc=0 server value
	figure=
	shift 4
	port=$((20000 + RANDOM % 20000))
	dir=$(mktemp -d)
	# Server on CPU 0, client on CPU 1: perftest times with the TSC, and
	# under TCG the vCPUs' TSCs disagree, so a process that migrates
	# reports 0, inf or nonsense.
	timeout 300 taskset -c 0 "$@" -F -p "$port" >"$dir/server" 2>&1 &
	server=$!
	for _ in $(seq 600); do
		listening "$port" && break
		kill -0 $server 2>/dev/null || break
		sleep 0.1
	done
	timeout 300 taskset -c 1 "$@" -F -p "$port" "$addr" >"$dir/client" 2>&1 || rc=$?
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

# run_device PEER DEVICE ADDR EXTRA...: every test on one device.
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
		for _ in 1 2; do
			# shellcheck disable=SC2086 # args are words
			run_pair "$peer" "$test" "$kind" "$addr" $args -d "$dev" "$@" && break
		done
		[[ -z $figure ]] || result "$peer" "$test" "$figure" "${units[$kind]}"
	done
	echo "# $peer: $((SECONDS - start)) s"
}

echo "# guest: $(uname -r), $(nproc) CPUs, $(ib_write_bw --version 2>&1 | head -1)"

ip addr add "$ip4/24" dev eth0
ip link set eth0 up
for round in $(seq "${BENCH_ROUNDS:-3}"); do
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
done

# The median of each figure's rounds.
for key in "${order[@]}"; do
	read -r peer test unit <<<"$key"
	read -ra figs <<<"${runs[$key]}"
	echo "# $peer $test rounds: ${figs[*]}"
	echo "bench: $peer $test $(printf '%s\n' "${figs[@]}" | sort -g |
		sed -n "$(((${#figs[@]} + 1) / 2))p") $unit"
done
echo "# bench done"
