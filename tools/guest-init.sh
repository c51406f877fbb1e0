#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# PID 1 of the rsoft guest (see tools/vm.sh): the host's root is mounted
# read-only; give the guest writable scratch space, load rsoft, run the
# command, report its status, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
# What udev makes on any system: bash's <(...) passes /dev/fd/N.
ln -sfn /proc/self/fd /dev/fd
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# Writable, yet showing the host's files (a checkout or cache may live
# there): the read-only host directory under a tmpfs, joined by overlayfs.
for d in /tmp /var/tmp /root; do
	w=/run/overlay$d
	mkdir -p "$w/upper" "$w/work"
	mount -t overlay overlay -o "lowerdir=$d,upperdir=$w/upper,workdir=$w/work" "$d"
done
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p /run/share
mount -t 9p -o trans=virtio,version=9p2000.L rsoftshare /run/share
# vm.sh -s: a directory shared with the other guest, if there is one
mkdir -p /run/peer
mount -t 9p -o trans=virtio,version=9p2000.L rsoftpeer /run/peer 2>/dev/null ||
	rmdir /run/peer
# The host's sign that the kernel lived to run this (see vm.sh's boot).
: > /run/share/up
echo "rsoft-guest: up"
. /run/share/env

# The guest kernel's own modules (rxe, siw) live in the kernel cache, and
# the host may have no /lib/modules to bind them over: a modprobe that looks
# there (-d) serves the shell and the kernel's own requests (rdma link add).
if [[ -d $RSOFT_MODULES ]]; then
	mkdir -p /run/rsoft/bin
	printf '#!/bin/sh\nexec /sbin/modprobe -d %q "$@"\n' "${RSOFT_MODULES%/lib/modules}" \
		> /run/rsoft/bin/modprobe
	chmod 755 /run/rsoft/bin/modprobe
	echo /run/rsoft/bin/modprobe > /proc/sys/kernel/modprobe
	export PATH=/run/rsoft/bin:$PATH
fi
ip link set lo up

finish() {
	dmesg > /run/share/dmesg
	echo "$1" > /run/share/status
	sync
	umount /run/share
	busybox reboot -f
}

# insmod loads nothing that rsoft.ko needs: a kernel that built the CRC-32
# library (the ICRC's crc32_le()) as a module, as 7.x may when only modules
# select it, has it loaded here, for the tests that insmod rsoft.ko too.
deps=$(modinfo -F depends "$RSOFT_TOP/rsoft.ko" 2>/dev/null | tr , ' ')
# shellcheck disable=SC2086 # module names are words
[[ -z $deps ]] || modprobe -a $deps || echo "rsoft-guest: modprobe $deps failed"

if [[ $RSOFT_LOAD == 1 ]]; then
	# shellcheck disable=SC2086 # parameters are words
	if ! insmod "$RSOFT_TOP/rsoft.ko" $RSOFT_MODARGS; then
		echo "rsoft-guest: insmod rsoft.ko failed"
		finish 125
	fi
fi
"${RSOFT_CMD[@]}"
finish $?
