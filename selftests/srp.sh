#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# srp.sh TYPE [ADDR]: the SCSI RDMA Protocol through a RoCE link of link
# type TYPE (rsoft or rxe) on the netdev that holds ADDR (default 10.0.2.15
# on eth0). The kernel's SRP target (ib_srpt, under LIO) is set up through
# configfs: a 32 MiB ramdisk LUN (rd_mcp), an ACL for ADDR, an rdma_cm
# listener. The kernel's SRP initiator (ib_srp) logs in over rdma_cm, a
# SCSI disk appears; patterns written with dd (1 MiB and 4 KiB O_DIRECT,
# odd-sized unaligned buffered) are read back; logout, a second login
# reads the data back from the target, logout; the target is torn down,
# the modules removed, and `rdma res` shows the device as it was before.
# First, the test kernel's other storage modules load and unload.
# One TAP line per check.
#
# roce.sh runs it while its links exist; run alone, it adds (and deletes)
# a link ${TYPE}_eth0 itself.
set -u
type=${1:?usage: srp.sh rsoft|rxe [ADDR]}
addr=${2:-10.0.2.15}
dev=${type}_eth0
port=5555	# rdma_cm has no SRP port of its own: any free one
T=120
tgt=/sys/kernel/config/target
rd=$tgt/core/rd_mcp_0/srp
work=$(mktemp -d /dev/shm/srp.XXXXXX)
start=$SECONDS

TAP_PREFIX="$type: srp: " TAP_TIMEOUT=$T
. "$(dirname "$0")/tap.sh"
# run NAME COMMAND...: the command's status decides; its output shows on
# failure (expect, matching anything). This script's functions bound their
# own waits: timeout cannot run them.
run() {
	local TAP_TIMEOUT=$TAP_TIMEOUT
	declare -F "$2" >/dev/null && TAP_TIMEOUT=
	expect "$1" '' "${@:2}"
}
# poll SECONDS CONDITION: the shell condition, every 0.2 s, until it holds.
poll() { until_ok "$1" sh -c "$2"; }
# The kernel's own account when a step fails.
klog() { dmesg | grep -E 'srp|scsi|target|rdma|rsoft|rxe' | tail -${1:-25} | sed 's/^/# dmesg: /'; }

# --- the storage modules of the test kernel: each makes what it is for
# (a loop and a null_blk device, a scsi_debug disk, dm's multipath target)
# and goes away again. One modprobe each way: under TCG every modprobe
# costs seconds.
storage_mods=(loop null_blk scsi_debug dm_multipath)
storage() {
	local what bad=0
	modprobe -a "${storage_mods[@]}" || return 1
	for what in 'test -b /dev/loop0' 'test -b /dev/nullb0' \
		'grep -qs ^scsi_debug /sys/class/scsi_disk/*/device/model' \
		'dmsetup targets | grep -q ^multipath'; do
		poll 30 "$what" || { echo "# not seen: $what"; bad=1; }
	done
	modprobe -r "${storage_mods[@]}" || bad=1
	for what in "${storage_mods[@]}"; do
		[[ -d /sys/module/$what ]] && { echo "# $what still loaded"; bad=1; }
	done
	return $bad
}
check "${storage_mods[*]} load, make their devices, unload" storage

own_link=
if [[ ! -d /sys/class/infiniband/$dev ]]; then
	ip addr add "$addr/24" dev eth0 2>/dev/null
	ip link set eth0 up
	[[ $type == rxe ]] && modprobe rdma_rxe
	own_link=$dev
	run "rdma link add $dev" rdma link add "$dev" type "$type" netdev eth0 || exit 0
fi
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
# ib_srpt names its ports after GID 0, which a new RoCE link fills in
# shortly after it registers.
gid0=/sys/class/infiniband/$dev/ports/1/gids/0
poll 30 "! grep -q '^[0:]*$' $gid0"
# What the device holds before: rdma res's per-device counts come back
# to this after logout and unload, but for CQs: the RDMA core keeps its
# shared CQs (ib_srpt's come from that pool) until the device goes.
res_of_dev="rdma res show | grep ' $dev: ' | cut -d' ' -f2- | sed 's/ cq [0-9]*//'"
res_before=$(sh -c "$res_of_dev")

run "modprobe ib_srpt ib_srp" modprobe -a ib_srpt ib_srp
srp_host=/sys/class/infiniband_srp/srp-$dev-1
run "ib_srp offers $srp_host" test -w "$srp_host/add_target"

# --- the target. Its service GUID (the first device's node GUID unless
# set) is the target port ID an initiator must ask for.
guid=$(cat /sys/module/ib_srpt/parameters/srpt_service_guid)
guid=${guid#0x}
# An srpt port is named by its GUID (GID 0's interface ID); rdma_cm logins
# on it look their ACL up by the address they come from.
tport=$(cut -d: -f5-8 "$gid0")
tpg=$tgt/srpt/$tport/tpgt_1
setup_target() {
	mkdir -p "$rd" &&
		echo rd_pages=8192 > "$rd/control" &&
		echo 1 > "$rd/enable" &&
		mkdir -p "$tpg/lun/lun_0" &&
		ln -s "$rd" "$tpg/lun/lun_0/srp" &&
		mkdir -p "$tpg/acls/$addr/lun_0" &&
		ln -s "$tpg/lun/lun_0" "$tpg/acls/$addr/lun_0/lun" &&
		echo 1 > "$tpg/enable" &&
		echo $port > "$tgt/srpt/discovery_auth/rdma_cm_port"
}
run "ib_srpt: ramdisk LUN, port $tport, ACL $addr, rdma_cm port $port" setup_target
if poll 30 "rdma res show cm_id | grep -q 'state LISTEN .*:$port '"; then
	pass "ib_srpt: listens on port $port (rdma_cm)"
else
	fail "ib_srpt: listens on port $port (rdma_cm)"
	rdma res show cm_id | sed 's/^/# /'
fi

# --- the initiator. A login that asks for a target port ID ib_srpt does
# not serve comes back rejected (the REJ travels as rdma_cm private data)
# and leaves no SCSI host.
other=$(printf %016x $((0x$guid ^ 1)))
check "ib_srp: a login to target port $other is rejected" timeout $T sh -c \
	"! echo id_ext=$other,ioc_guid=$guid,dest=$addr:$port 2>/dev/null > $srp_host/add_target &&
	! grep -qsx ib_srp /sys/class/scsi_host/*/proc_name"

# log in, find the SCSI host and its disk
host='' disk=''
login() { # NAME
	local h
	host=''
	if ! run "$1: ib_srp add_target id_ext=$guid,ioc_guid=$guid,dest=$addr:$port" \
		sh -c "echo id_ext=$guid,ioc_guid=$guid,dest=$addr:$port > $srp_host/add_target"; then
		klog
		return 1
	fi
	for h in /sys/class/scsi_host/host*; do
		[[ $(cat "$h/proc_name" 2>/dev/null) == ib_srp && $(cat "$h/local_ib_device" 2>/dev/null) == "$dev" ]] || continue
		host=${h##*host}
	done
	local blk=/sys/class/scsi_host/host$host/device/target$host:0:0/$host:0:0:0/block
	if [[ -n $host ]] && poll 60 "ls $blk 2>/dev/null | grep -q ."; then
		disk=/dev/$(ls "$blk")
		check "$1: disk $disk on SCSI host $host" test -b "$disk"
	else
		fail "$1: a SCSI disk appeared (host ${host:-none})"
		klog
		return 1
	fi
}
logout() { # NAME
	run "$1: logout (srp_remote_ports/port-$host:1/delete)" \
		sh -c "echo 1 > /sys/class/srp_remote_ports/port-$host:1/delete" &&
		check "$1: SCSI host $host gone" poll 60 "! test -e /sys/class/scsi_host/host$host"
}
# RC QPs on the link: rdma_cm creates them for both sides (comm rdma_cm).
rc_qps="rdma res show qp link $dev/1 | grep -c ' type RC '"

if login "session 1"; then
	expect "disk: LIO ramdisk of 32 MiB" "^LIO-ORG $((32 << 20))\$" \
		sh -c "echo \$(cat /sys/block/${disk#/dev/}/device/vendor) \$(blockdev --getsize64 $disk)"
	nch=$(cat "/sys/class/scsi_host/host$host/ch_count")
	if [[ $(sh -c "$rc_qps") == $((2 * nch)) ]]; then
		pass "rdma res: $((2 * nch)) RC QPs, initiator's and target's (ch_count $nch)"
	else
		fail "rdma res: $((2 * nch)) RC QPs, initiator's and target's (ch_count $nch)"
		rdma res show qp link "$dev/1" | sed 's/^/# /'
	fi

	# 1 MiB O_DIRECT: 8 MiB at 4 MiB (the target RDMA-reads the data)
	head -c 8M /dev/urandom > "$work/a"
	run "dd 8 x 1 MiB O_DIRECT write" \
		dd if="$work/a" of="$disk" bs=1M seek=4 count=8 oflag=direct status=none
	run "dd 8 x 1 MiB O_DIRECT read back" \
		dd if="$disk" of="$work/a.back" bs=1M skip=4 count=8 iflag=direct status=none
	run "1 MiB O_DIRECT data read back intact" cmp "$work/a" "$work/a.back"
	# 4 KiB O_DIRECT: 256 KiB at 13 MiB, each write small enough to travel
	# in the request itself (ib_srp's immediate data)
	head -c 256K /dev/urandom > "$work/c"
	run "dd 64 x 4 KiB O_DIRECT write" \
		dd if="$work/c" of="$disk" bs=4K seek=$((13 << 8)) count=64 oflag=direct status=none
	run "dd 64 x 4 KiB O_DIRECT read back" \
		dd if="$disk" of="$work/c.back" bs=4K skip=$((13 << 8)) count=64 iflag=direct status=none
	run "4 KiB O_DIRECT data read back intact" cmp "$work/c" "$work/c.back"
	# odd sizes at an odd offset, buffered, through the page cache
	head -c 777777 /dev/urandom > "$work/b"
	off=16777251	# 16 MiB + 35
	run "dd buffered write, 4567-byte blocks at byte $off" \
		dd if="$work/b" of="$disk" bs=4567 oflag=seek_bytes seek=$off conv=fsync,notrunc status=none
	echo 3 > /proc/sys/vm/drop_caches
	run "dd buffered read back, 3333-byte blocks" \
		dd if="$disk" of="$work/b.back" bs=3333 iflag=skip_bytes,count_bytes skip=$off count=777777 status=none
	run "buffered data read back intact" cmp "$work/b" "$work/b.back"
	run "the target's LU counted the I/O: 8 MiB written and read at least" sh -c "
		w=\$(cat $rd/statistics/scsi_lu/write_mbytes) r=\$(cat $rd/statistics/scsi_lu/read_mbytes)
		echo written \$w MiB, read \$r MiB; test \$w -ge 8 -a \$r -ge 8"
	logout "session 1"
fi
if poll 30 "test \$($rc_qps) = 0"; then
	pass "rdma res: no RC QP left after logout"
else
	fail "rdma res: no RC QP left after logout"
	rdma res show qp link "$dev/1" | sed 's/^/# /'
fi

# --- a new session finds what the first one wrote on the target
if login "session 2"; then
	run "session 2: dd 8 x 1 MiB O_DIRECT read" \
		dd if="$disk" of="$work/a.2" bs=1M skip=4 count=8 iflag=direct status=none
	run "session 2: the data of session 1 read back intact" cmp "$work/a" "$work/a.2"
	logout "session 2"
fi

# --- tear the target down
teardown() {
	echo 0 > "$tgt/srpt/discovery_auth/rdma_cm_port" &&
		echo 0 > "$tpg/enable" &&
		rm "$tpg/acls/$addr/lun_0/lun" &&
		rmdir "$tpg/acls/$addr/lun_0" "$tpg/acls/$addr" &&
		rm "$tpg/lun/lun_0/srp" &&
		rmdir "$tpg/lun/lun_0" "$tpg" "$tgt/srpt/$tport" "$tgt/srpt" &&
		rmdir "$rd" "${rd%/*}"
}
run "ib_srpt: configfs torn down" teardown
check "ib_srpt: nothing listens on $port" \
	poll 30 "! rdma res show cm_id | grep -q ':$port '"
run "modprobe -r ib_srp ib_srpt (and scsi_transport_srp, target_core_mod)" \
	modprobe -r ib_srp ib_srpt
check "no SRP or LIO module left" \
	sh -c '! ls -d /sys/module/ib_srp /sys/module/ib_srpt /sys/module/scsi_transport_srp /sys/module/target_core_mod 2>/dev/null'
if poll 30 "test \"\$($res_of_dev)\" = '$res_before'"; then
	pass "rdma res: $dev holds what it held before ($res_before)"
else
	fail "rdma res: $dev holds what it held before ($res_before)"
	rdma res show | sed 's/^/# now: /'
	rdma res show qp link "$dev/1" | sed 's/^/# /'
fi
if poll 30 "! rdma res show cq dev $dev | grep -v 'comm \[ib_core\]'"; then
	pass "rdma res: only the RDMA core's own CQs left on $dev"
else
	fail "rdma res: only the RDMA core's own CQs left on $dev"
	rdma res show cq dev "$dev" | sed 's/^/# /'
fi
[[ -n $own_link ]] && run "rdma link delete $own_link" rdma link delete "$own_link"
rm -rf "$work"
echo "# srp.sh $type: $((SECONDS - start)) s"
exit 0
