# SPDX-License-Identifier: GPL-2.0
# Sourced after tap.sh by the NVMe over RDMA tests: nvme-rdma.sh (target
# and host on one machine) and twohost.sh (each on its own). The caller
# sets T (the bound of every command), nqn (the subsystem's NQN) and work
# (a directory on tmpfs). The target is an nvmet subsystem set up through
# configfs with a namespace backed by a 64 MiB file and an rdma port on
# ADDR:4420; the host connects with nvme-cli (several I/O queues), writes
# random data with dd (1 MiB O_DIRECT, then odd-sized, unaligned buffered
# I/O), reads it back through the device, and disconnects. One TAP line
# per check.

cfg=/sys/kernel/config/nvmet
uuid=$(cat /proc/sys/kernel/random/uuid)
hostargs=(--hostnqn="nqn.2014-08.org.nvmexpress:uuid:$uuid" --hostid="$uuid")
# The buffered I/O's place and length: 32 MiB + 35, 777777 bytes.
off=33554467 blen=777777

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

# target_up ADDR IMG: the subsystem, its namespace on the file IMG (made
# here), the port on ADDR:4420, listening.
target_up() {
	local addr=$1 img=$2
	mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
	truncate -s 64M "$img"
	setup() {
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
	run "nvmet: configfs subsystem, file namespace, rdma port $addr:4420" setup &&
		run "nvmet: the port listens (rdma_cm)" until_ok 30 sh -c \
			"rdma res show cm_id | grep -q 'state LISTEN .*src-addr $addr:4420 '"
}

# target_holds IMG DIR: the target's file IMG holds what the host wrote,
# which DIR has (host_io's files a and b).
target_holds() {
	dd if="$1" of="$work/a.img" bs=1M skip=4 count=8 status=none
	dd if="$1" of="$work/b.img" iflag=skip_bytes,count_bytes skip=$off count=$blen status=none
	run "the target's file holds the O_DIRECT data" cmp "$2/a" "$work/a.img"
	run "the target's file holds the buffered data" cmp "$2/b" "$work/b.img"
}

# target_down: the port and the subsystem go; nothing listens on 4420.
target_down() {
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
}

# host_io ADDR: discovers and connects to the subsystem at ADDR:4420,
# writes $work/a and $work/b through its namespace and reads them back,
# and disconnects.
host_io() {
	local addr=$1 ctrl='' disk='' nq
	run "nvme discover -t rdma lists the subsystem" sh -c \
		"nvme discover -t rdma -a $addr -s 4420 ${hostargs[*]} | grep -q 'subnqn: *$nqn'"
	run "nvme connect -t rdma -i 2" \
		nvme connect -t rdma -a "$addr" -s 4420 -n "$nqn" -i 2 "${hostargs[@]}"
	ns_ready() {
		local c blk
		for c in /sys/class/nvme/nvme*; do
			[[ -f $c/subsysnqn && $(cat "$c/subsysnqn") == "$nqn" ]] && ctrl=${c##*/}
		done
		[[ -n $ctrl ]] || return 1
		blk=$(ls -d /sys/class/nvme/"$ctrl"/nvme*n1 2>/dev/null | head -1)
		[[ -n $blk && -b /dev/${blk##*/} ]] || return 1
		disk=/dev/${blk##*/}
	}
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
		head -c $blen /dev/urandom > "$work/b"
		run "dd buffered write, 4567-byte blocks at byte $off" \
			dd if="$work/b" of="$disk" bs=4567 oflag=seek_bytes seek=$off conv=fsync,notrunc status=none
		echo 3 > /proc/sys/vm/drop_caches
		run "dd buffered read back, 3333-byte blocks" \
			dd if="$disk" of="$work/b.back" bs=3333 iflag=skip_bytes,count_bytes skip=$off count=$blen status=none
		run "buffered data read back equals what was written" cmp "$work/b" "$work/b.back"
		run "nvme flush" nvme flush "$disk"
	else
		fail "no namespace appeared for $nqn"
		nvme list-subsys 2>&1 | sed 's/^/# /'
	fi
	run "nvme disconnect" sh -c "nvme disconnect -n $nqn | grep -q 'disconnected 1 controller'"
	run "no controller left" until_ok 30 sh -c "! grep -qsx '$nqn' /sys/class/nvme/*/subsysnqn"
}
