#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nvme-rdma.sh TYPE [ADDR]: NVMe over RDMA through a RoCE link of link type
# TYPE (rsoft or rxe) on the netdev that holds ADDR (default 10.0.2.15 on
# eth0): an nvmet target set up through configfs with an rdma port on
# ADDR:4420 and a namespace backed by a 64 MiB file on tmpfs; the host side
# connects with nvme-cli (several I/O queues), writes patterns with dd
# (1 MiB O_DIRECT, then odd-sized, unaligned buffered I/O), reads them back
# through the device and through the target's file, disconnects, and the
# target is torn down. One TAP line per check.
#
# roce.sh runs it while its links exist; run alone, it adds (and deletes)
# a link ${TYPE}_eth0 itself.
set -u
type=${1:?usage: nvme-rdma.sh rsoft|rxe [ADDR]}
addr=${2:-10.0.2.15}
T=120
nqn=nqn.2014-08.org.rsoft:roce-$type
uuid=$(cat /proc/sys/kernel/random/uuid)
hostnqn=nqn.2014-08.org.nvmexpress:uuid:$uuid
cfg=/sys/kernel/config/nvmet
work=$(mktemp -d /dev/shm/nvme-rdma.XXXXXX)	# tmpfs
img=$work/ns1.img
start=$SECONDS

TAP_PREFIX="$type: nvme-rdma: "
. "$(dirname "$0")/tap.sh"
# run NAME COMMAND...: one TAP line; the command's output shows on failure.
# Programs are bounded by timeout; this script's functions bound their own
# waits.
run() {
	local name=$1 out bound=(timeout -k 5 $T)
	shift
	declare -F "$1" >/dev/null && bound=()
	if out=$("${bound[@]}" "$@" 2>&1); then
		pass "$name"
	else
		fail "$name (status $?)"
		sed 's/^/# /' <<<"$out"
		return 1
	fi
}

own_link=
if ! rdma link show | grep -q "netdev eth0"; then
	ip addr add "$addr/24" dev eth0 2>/dev/null
	ip link set eth0 up
	[[ $type == rxe ]] && modprobe rdma_rxe
	own_link=${type}_eth0
	run "rdma link add $own_link" rdma link add "$own_link" type "$type" netdev eth0 || exit 0
fi
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config

# --- the target: subsystem, file-backed namespace, rdma port
truncate -s 64M "$img"
setup_target() {
	mkdir "$cfg/subsystems/$nqn" &&
		echo 1 > "$cfg/subsystems/$nqn/attr_allow_any_host" &&
		mkdir "$cfg/subsystems/$nqn/namespaces/1" &&
		echo -n "$img" > "$cfg/subsystems/$nqn/namespaces/1/device_path" &&
		echo 1 > "$cfg/subsystems/$nqn/namespaces/1/enable" &&
		mkdir "$cfg/ports/1" &&
		echo rdma > "$cfg/ports/1/addr_trtype" &&
		echo ipv4 > "$cfg/ports/1/addr_adrfam" &&
		echo "$addr" > "$cfg/ports/1/addr_traddr" &&
		echo 4420 > "$cfg/ports/1/addr_trsvcid" &&
		ln -s "$cfg/subsystems/$nqn" "$cfg/ports/1/subsystems/$nqn"
}
run "nvmet: configfs subsystem, file namespace, rdma port $addr:4420" setup_target
run "nvmet: the port listens (rdma_cm)" until_ok 30 sh -c \
	"rdma res show cm_id | grep -q 'state LISTEN .*src-addr $addr:4420 '"

# --- the host
hostargs=(--hostnqn="$hostnqn" --hostid="$uuid")
run "nvme discover -t rdma lists the subsystem" sh -c \
	"nvme discover -t rdma -a $addr -s 4420 ${hostargs[*]} | grep -q 'subnqn: *$nqn'"
run "nvme connect -t rdma -i 2" \
	nvme connect -t rdma -a "$addr" -s 4420 -n "$nqn" -i 2 "${hostargs[@]}"
ctrl_of_nqn() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[[ -f $c/subsysnqn && $(cat "$c/subsysnqn") == "$nqn" ]] || continue
		echo "${c##*/}"
		return 0
	done
	return 1
}
ns_ready() {
	ctrl=$(ctrl_of_nqn) || return 1
	blk=$(ls -d /sys/class/nvme/"$ctrl"/nvme*n1 2>/dev/null | head -1)
	[[ -n $blk && -b /dev/${blk##*/} ]] || return 1
	disk=/dev/${blk##*/}
}
ctrl='' disk=''
if until_ok 60 ns_ready; then
	pass "namespace $disk of controller $ctrl (transport $(cat /sys/class/nvme/"$ctrl"/transport), $(cat /sys/class/nvme/"$ctrl"/address))"
	run "controller's transport is rdma to $addr:4420" grep -qx rdma "/sys/class/nvme/$ctrl/transport" &&
		run "controller's address" grep -q "traddr=$addr,trsvcid=4420" "/sys/class/nvme/$ctrl/address"
	run "namespace is 64 MiB" test "$(blockdev --getsize64 "$disk")" = $((64 << 20))
	# I/O queues: the host's blk-mq hardware queues of the namespace
	nq=$(ls -d /sys/block/"${disk#/dev/}"/mq/* 2>/dev/null | wc -l)
	run "several I/O queues (blk-mq: $nq)" test "$nq" -ge 2

	# 1 MiB O_DIRECT: 8 MiB at 4 MiB
	head -c 8M /dev/urandom > "$work/a"
	run "dd 8 x 1 MiB O_DIRECT write" \
		dd if="$work/a" of="$disk" bs=1M seek=4 count=8 oflag=direct status=none
	run "dd 8 x 1 MiB O_DIRECT read back" \
		dd if="$disk" of="$work/a.back" bs=1M skip=4 count=8 iflag=direct status=none
	run "O_DIRECT data read back equals what was written" cmp "$work/a" "$work/a.back"
	# odd sizes at an odd offset, buffered, through the page cache
	head -c 777777 /dev/urandom > "$work/b"
	off=33554467	# 32 MiB + 35
	run "dd buffered write, 4567-byte blocks at byte $off" \
		dd if="$work/b" of="$disk" bs=4567 oflag=seek_bytes seek=$off conv=fsync,notrunc status=none
	echo 3 > /proc/sys/vm/drop_caches
	run "dd buffered read back, 3333-byte blocks" \
		dd if="$disk" of="$work/b.back" bs=3333 iflag=skip_bytes,count_bytes skip=$off count=777777 status=none
	run "buffered data read back equals what was written" cmp "$work/b" "$work/b.back"
	# the target's file holds the same bytes
	# (files, not <(...): the guest has no /dev/fd)
	dd if="$img" of="$work/a.img" bs=1M skip=4 count=8 status=none
	dd if="$img" of="$work/b.img" iflag=skip_bytes,count_bytes skip=$off count=777777 status=none
	run "the target's file holds the O_DIRECT data" cmp "$work/a" "$work/a.img"
	run "the target's file holds the buffered data" cmp "$work/b" "$work/b.img"
	run "nvme flush" nvme flush "$disk"
else
	fail "no namespace appeared for $nqn"
	nvme list-subsys 2>&1 | sed 's/^/# /'
fi
run "nvme disconnect" sh -c "nvme disconnect -n $nqn | grep -q 'disconnected 1 controller'"
run "no controller left" until_ok 30 sh -c "! grep -qsx '$nqn' /sys/class/nvme/*/subsysnqn"

# --- tear the target down
teardown() {
	rm -f "$cfg/ports/1/subsystems/$nqn" &&
		rmdir "$cfg/ports/1" &&
		echo 0 > "$cfg/subsystems/$nqn/namespaces/1/enable" &&
		rmdir "$cfg/subsystems/$nqn/namespaces/1" &&
		rmdir "$cfg/subsystems/$nqn"
}
run "nvmet: configfs torn down" teardown
run "nvmet: nothing listens on 4420" until_ok 30 sh -c \
	"! rdma res show cm_id | grep -q ':4420 '"
[[ -n $own_link ]] && run "rdma link delete $own_link" rdma link delete "$own_link"
rm -rf "$work"
echo "# nvme-rdma.sh $type: $((SECONDS - start)) s"
exit 0
