#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The test run inside the guest (tools/vm.sh -n): rsoft.ko is not loaded yet.
# Prints one TAP line per check ("ok"/"not ok" at the start of a line); the
# host runner (tools/check.sh) counts them.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
ko=$top/rsoft.ko
bin=$top/selftests/build

. "$top/selftests/tap.sh"
loaded() { [[ -d /sys/module/rsoft ]]; }
# took STEPS: the time since the last took, for the CI budget's accounts
mark=$SECONDS
took() {
	echo "# time: $1: $((SECONDS - mark)) s"
	mark=$SECONDS
}

[[ -w /sys/kernel/debug/kmemleak ]] && echo clear > /sys/kernel/debug/kmemleak

# --- bad parameters are refused and leave nothing behind
for bad in devices=17 devices=-1; do
	if insmod "$ko" $bad 2>/dev/null || loaded; then
		fail "insmod rsoft.ko $bad is refused"
		rmmod rsoft 2>/dev/null
	else
		pass "insmod rsoft.ko $bad is refused"
	fi
done
check "no device left by refused loads" test -z "$(ls /sys/class/infiniband)"

# --- by default the module only offers its link type (rdma link add)
if insmod "$ko"; then
	check "insmod rsoft.ko: no device until a link is added" test -z "$(ls /sys/class/infiniband)"
	check "insmod rsoft.ko: rmmod" rmmod rsoft
else
	fail "insmod rsoft.ko (no parameter)"
fi

# --- stock tools see the device
check "insmod rsoft.ko devices=1" insmod "$ko" devices=1
expect "ibv_devices lists rsoft0" '^\s+rsoft0\s+02005e0000000001$' ibv_devices
# (one ibv_devinfo for all: each process costs the TCG guest a second)
devinfo_out=$(ibv_devinfo -v -d rsoft0 2>&1)
devinfo=(printf '%s\n' "$devinfo_out")
expect "ibv_devinfo: port active" 'state:\s+PORT_ACTIVE \(4\)' "${devinfo[@]}"
expect "ibv_devinfo: physical state LinkUp" 'phys_state:\s+LINK_UP \(5\)' "${devinfo[@]}"
expect "ibv_devinfo: LID 1" 'port_lid:\s+1$' "${devinfo[@]}"
expect "ibv_devinfo: active MTU 4096" 'active_mtu:\s+4096 \(5\)' "${devinfo[@]}"
expect "ibv_devinfo: GID 0" 'GID\[ *0\]:\s+fe80:0000:0000:0000:0200:5e00:0000:0001' "${devinfo[@]}"
expect "ibv_devinfo: max_cqe" 'max_cqe:\s+65535$' "${devinfo[@]}"
expect "ibv_devinfo: max_pd" 'max_pd:\s+4096$' "${devinfo[@]}"
expect "ibv_devinfo: transport InfiniBand" 'transport:\s+InfiniBand' "${devinfo[@]}"
expect "ibv_devinfo: fw_ver" 'fw_ver:\s+1\.0\.0' "${devinfo[@]}"
expect "ibv_devinfo: vendor_id (the GUIDs' OUI)" 'vendor_id:\s+0x2005e$' "${devinfo[@]}"
expect "rdma dev shows rsoft0" '^[0-9]+: rsoft0: node_type ca fw 1\.0\.0 node_guid 0200:5e00:0000:0001' rdma dev
expect "rdma link shows port ACTIVE, LID 1" '^link rsoft0/1 .* lid 1 .*state ACTIVE physical_state LINK_UP' rdma link

# --- from here on libibverbs loads only the providers the tests open:
# libipathverbs (rsoft's qib id), libhfi1verbs (provider=hfi1), rxe and siw.
# Loading all seventeen costs each process of the debug TCG guest ~0.7 s
# more, and the checks above, with all of them, show that no other
# provider claims rsoft0.
ours=$(mktemp -d)
cp /etc/libibverbs.d/{ipathverbs,hfi1verbs,rxe,siw}.driver "$ours/"
mount --bind "$ours" /etc/libibverbs.d

# --- selftests
for t in "$bin"/*; do
	[[ -f $t ]] && "$t"
done
took "the selftests"

# --- the verbs fuzzer, a short campaign (make fuzz runs long ones)
for seed in 1 2 3 4 5; do
	"$bin/fuzz/fuzz" -s $seed -n 5000
done
"$bin/fuzz/fuzz" -s 6 -n 10000 -t 4 -l 2
took "the verbs fuzzer"

# --- rdma-core's own pyverbs test suite (skips keep the suite's reasons)
"$top/selftests/pyverbs.sh"
took "pyverbs"

# --- a kernel consumer: ib_alloc_cq in each poll context (TAP in the log)
if insmod "$top/selftests/kverbs/rsoft_kverbs.ko"; then
	pass "kernel consumer test module loads (all its checks passed)"
	rmmod rsoft_kverbs
else
	fail "kernel consumer test module loads (all its checks passed)"
fi
dmesg | sed -n 's/.*rsoft_kverbs: \(\(not \)\{0,1\}ok [0-9]* - \)/\1/p'

# --- port counters through the core's hw stats (the selftests moved them)
expect "rdma statistic show: rsoft's port counters" \
	'^link rsoft0/1 cqes [1-9][0-9]* cq_overruns [1-9][0-9]* completion_events [1-9][0-9]* error_completions [1-9][0-9]* sends [1-9][0-9]* receives [1-9][0-9]* rdma_writes [1-9][0-9]* rdma_reads [1-9][0-9]* atomics [1-9][0-9]* bytes [1-9][0-9]*' \
	rdma statistic show link rsoft0/1
expect "rdma stat show lists rsoft0/1 with its counters" \
	'^link rsoft0/1 cqes [1-9][0-9]* cq_overruns ' rdma stat show

# --- CQ attributes in the core's resource tracking (the server's CQ)
ibv_rc_pingpong -d rsoft0 -p 18999 -r 77 >/dev/null 2>&1 &
holder=$!
# Until the server has made its CQ (seconds on a busy TCG guest).
for _ in {1..300}; do
	rdma res show cq dev rsoft0 | grep -q ibv_rc_pingpong && break
	nap 0.1
done
expect "rdma res show cq -dd: depth, queued, armed, overrun" \
	'dev rsoft0 .*cqe 78 .*drv_depth 78 drv_queued 0 drv_armed 0 drv_overrun 0 drv_overruns 0' \
	rdma -dd res show cq dev rsoft0
expect "rdma res show cq -d: the core's CQ attributes" \
	'^dev rsoft0 cqn [0-9]+ cqe 78 users 2 .*comm ibv_rc_pingpong' \
	rdma res show cq -d
kill $holder
wait $holder 2>/dev/null

# --- stock ibv_rc_pingpong between two processes, data checked (-c)
for size in 1 4096 65536 1048576; do
	iters=$((size < 1048576 ? 500 : 200))
	for events in "" -e; do
		"$top/selftests/pingpong.sh" "ibv_rc_pingpong -s $size -n $iters -c $events" \
			ibv_rc_pingpong -s "$size" -n "$iters" -c $events
	done
done

# --- stock ibv_uc_pingpong between two processes
for size in 1 4096 65536; do
	for events in "" -e; do
		"$top/selftests/pingpong.sh" "ibv_uc_pingpong -s $size -n 500 -c $events" \
			ibv_uc_pingpong -s "$size" -n 500 -c $events
	done
done

# --- stock ibv_ud_pingpong: payload after the GRH space; -g 0 adds a GRH
for grh in "" "-g 0"; do
	for events in "" -e; do
		"$top/selftests/pingpong.sh" "ibv_ud_pingpong -s 2048 -n 500 -c $grh $events" \
			ibv_ud_pingpong -s 2048 -n 500 -c $grh $events
	done
done

# --- stock ibv_srq_pingpong: 16 RC QPs receiving from one SRQ
for events in "" -e; do
	"$top/selftests/pingpong.sh" "ibv_srq_pingpong -s 4096 -n 1000 -c $events" \
		ibv_srq_pingpong -s 4096 -n 1000 -c $events
done
took "the stock pingpongs"

# --- perftest between two processes: RC, and the UC/UD variants it has
for t in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw \
	ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
	"$top/selftests/pingpong.sh" "perftest $t (RC)" "$t" -n 200 -F
done
for t in ib_send_bw ib_write_bw ib_send_lat ib_write_lat; do
	"$top/selftests/pingpong.sh" "perftest $t (UC)" "$t" -c UC -n 200 -F
done
for t in ib_send_bw ib_send_lat; do
	"$top/selftests/pingpong.sh" "perftest $t (UD)" "$t" -c UD -n 200 -F
done
"$top/selftests/pingpong.sh" "perftest ib_send_lat (RC, 128 B inline)" \
	ib_send_lat -s 64 -I 128 -n 200 -F
"$top/selftests/pingpong.sh" "perftest ib_send_bw (UD, 64 B inline)" \
	ib_send_bw -c UD -s 64 -I 64 -n 200 -F
took "perftest"

check "rmmod rsoft" rmmod rsoft

# --- several devices, each with its own LID and GUID
if insmod "$ko" devices=3; then
	expect "devices=3: rsoft2 listed" '^\s+rsoft2\s+02005e0000000003$' ibv_devices
	expect "devices=3: rsoft2 has LID 3" 'port_lid:\s+3$' ibv_devinfo -d rsoft2
	"$bin/multidev"
	check "devices=3: rmmod" rmmod rsoft
else
	fail "insmod rsoft.ko devices=3"
fi

# --- load, use, unload, 10 times
reload_ok=1
for i in $(seq 10); do
	if ! insmod "$ko" devices=1 || ! ibv_devinfo -d rsoft0 >/dev/null || ! rmmod rsoft; then
		reload_ok=0
		echo "# load/use/unload cycle $i failed"
		break
	fi
done
check "10 x insmod, open/close context, rmmod" test $reload_ok = 1
check "no device left after rmmod" test -z "$(ls /sys/class/infiniband)"

# --- provider=hfi1: the device is opened by stock libhfi1verbs. Only that
# provider is offered to libibverbs here, so the qib id must go unclaimed.
if insmod "$ko" provider=hfi2 2>/dev/null || loaded; then
	fail "insmod rsoft.ko provider=hfi2 is refused"
	rmmod rsoft 2>/dev/null
else
	pass "insmod rsoft.ko provider=hfi2 is refused"
fi
only_hfi1=$(mktemp -d)
cp /etc/libibverbs.d/hfi1verbs.driver "$only_hfi1/"
mount --bind "$only_hfi1" /etc/libibverbs.d
if insmod "$ko" devices=1; then
	check "provider=qib (default): libhfi1verbs does not claim rsoft0" \
		sh -c '! ibv_devices | grep -q rsoft0'
	rmmod rsoft
fi
if insmod "$ko" devices=1 provider=hfi1; then
	expect "provider=hfi1: libhfi1verbs opens rsoft0" 'state:\s+PORT_ACTIVE' ibv_devinfo -d rsoft0
	"$top/selftests/pingpong.sh" "provider=hfi1: ibv_rc_pingpong -c" \
		ibv_rc_pingpong -s 4096 -n 200 -c
	check "provider=hfi1: rmmod" rmmod rsoft
else
	fail "insmod rsoft.ko provider=hfi1"
fi
umount /etc/libibverbs.d
rm -rf "$only_hfi1"
took "devices, reloads, provider=hfi1"

# --- RoCE links and the rdma_cm users on them (rdmacm-utils, perftest -R,
# librpma, libfabric, pyverbs, NVMe over RDMA); the module as a user loads it
if insmod "$ko"; then
	ROCE_KERNEL_LOG=0 "$top/selftests/roce.sh" rsoft
	took "roce.sh"
	"$top/selftests/roce-cross.sh"
	took "roce-cross.sh"
	"$top/selftests/netns.sh"
	took "netns.sh"
	"$top/selftests/wire.sh"
	took "wire.sh"
	"$top/selftests/veth-loop.sh"
	took "veth-loop.sh"
	check "RoCE: rmmod once the links are gone" rmmod rsoft
else
	fail "insmod rsoft.ko for the RoCE links"
fi

# --- the guest kernel's own modules, for comparisons with rxe and siw
check "modprobe loads the guest kernel's rdma_rxe and siw" \
	sh -c 'modprobe rdma_rxe && modprobe siw && modprobe -r rdma_rxe siw'

# --- kernel log: no leak, no warning
umount /etc/libibverbs.d
"$top/selftests/kernel-log.sh"
took "rdma_rxe and siw, the kernel log"
echo "# time: the guest suite: $SECONDS s"
exit 0
