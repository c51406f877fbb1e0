#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Boot the guest kernel in QEMU with the host's root file system shared
# read-only (9p), rsoft.ko loaded, and run one command there.
#
#   tools/vm.sh [-k KDIR] [-t SECONDS] [-n] [-m ARGS] [-o DIR] [-i]
#               [-w listen|connect:PORT -s DIR] -- COMMAND [ARG...]
#
#   -k   kernel build directory (default: the cached debug kernel)
#   -t   give up after this many seconds (default 600)
#   -n   do not load rsoft.ko
#   -m   module parameters for rsoft.ko (default devices=1: rsoft0)
#   -o   keep the guest's dmesg (and status) in this host directory
#   -w   a second NIC (eth1) on an Ethernet segment of its own: a QEMU
#        socket network on 127.0.0.1:PORT, which the guest that listens
#        shares with the one guest that connects (see tools/twohost.sh)
#   -s   a host directory the guest may write, at /run/peer
#   -i   count instructions: one vCPU under TCG with -icount shift=0, so
#        that the guest's clock advances one nanosecond per instruction it
#        runs (and by warps while it idles); a time measured in the guest is
#        then an instruction count, the same on any host however busy
#
# COMMAND runs as root in the host's current directory, seen by the guest.
# Its output is printed; its exit status is vm.sh's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=${KDIR:-} timeout=600 load=1 modargs="devices=1" outdir="" extra=() icount=0 cpus=2
while getopts k:t:nm:o:w:s:i opt; do
	case $opt in
	k) kdir=$OPTARG ;;
	t) timeout=$OPTARG ;;
	n) load=0 ;;
	m) modargs=$OPTARG ;;
	o) outdir=$OPTARG ;;
	w)
		# Each end its own MAC: the listener ...:01, the other ...:02.
		mac=52:54:00:52:ce:0$([[ ${OPTARG%%:*} == listen ]] && echo 1 || echo 2)
		extra+=(-netdev "socket,id=wire,${OPTARG%%:*}=127.0.0.1:${OPTARG#*:}"
			-device "virtio-net-pci,netdev=wire,mac=$mac")
		;;
	s) extra+=(-virtfs "local,path=$OPTARG,mount_tag=rsoftpeer,security_model=none") ;;
	i) icount=1 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ ${1:-} == -- ]] && shift
(($#)) || die "no command given"
[[ -n $kdir ]] || kdir=$("$RSOFT_TOP/tools/kernel.sh" debug)

share=$(mktemp -d "${TMPDIR:-/tmp}/rsoft-vm.XXXXXX")
trap 'rm -rf "$share"' EXIT
write_env() {
	{
		printf 'cd %q\n' "$PWD"
		printf 'RSOFT_TOP=%q\n' "$RSOFT_TOP"
		printf 'RSOFT_MODULES=%q\n' "$kdir/modroot/lib/modules"
		printf 'RSOFT_LOAD=%q\n' "$load"
		printf 'RSOFT_MODARGS=%q\n' "$modargs"
		printf 'RSOFT_CMD=('
		printf '%q ' "$@"
		printf ')\n'
	} > "$share/env"
}

# /dev/kvm on this machine kind can hang a stock kernel in the BIOS: probe
# it once per host kernel and remember the answer.
accel=(-accel tcg,thread=multi -cpu max)
kvm_verdict=$RSOFT_CACHE/kvm-$(uname -r)
# The root is read-only and the host leaves it alone while the guest runs,
# so the guest may cache it (cache=loose): without that, every exec and
# library load goes to the host, and a process took seconds to start.
qemu() {
	timeout --foreground -k 5 "$1" qemu-system-x86_64 "${@:2}" \
		-smp "$cpus" -m 2G -display none -monitor none -serial stdio -no-reboot \
		-kernel "$kdir/arch/x86/boot/bzImage" \
		-append "root=hostroot rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro init=$RSOFT_TOP/tools/guest-init.sh console=ttyS0 loglevel=4 panic=-1 oops=panic acpi=noirq rcupdate.rcu_cpu_stall_suppress_at_boot=1" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$share",mount_tag=rsoftshare,security_model=none \
		-nic user,model=virtio-net-pci "${extra[@]}"
}
if [[ -w /dev/kvm && ! -f $kvm_verdict ]] && ((!icount)); then
	say "probing KVM"
	write_env true
	if qemu 60 -accel kvm -cpu host </dev/null >"$share/probe.log" 2>&1 &&
		[[ -f $share/status ]]; then
		echo kvm > "$kvm_verdict"
	else
		echo tcg > "$kvm_verdict"
	fi
	rm -f "$share/status" "$share/dmesg" "$share/up"
fi
if [[ -f $kvm_verdict && $(cat "$kvm_verdict") == kvm ]]; then
	accel=(-accel kvm -cpu host)
fi
# icount needs TCG's single thread, whatever the host offers; one vCPU, so
# that the count is of the CPU that runs what is timed alone.
if ((icount)); then
	accel=(-accel tcg -icount shift=0 -cpu max)
	cpus=1
fi

# A kernel that died while it booted, before init ran and so before any
# of rsoft's code or tests (as multi-threaded TCG was seen to make one do,
# see tools/distro.sh), is booted once more; a second such death fails, as
# do a hang and any death after init started. Not a guest of two joined by
# a wire (-w): its peer would wait for the first.
write_env "$@"
for attempt in 1 2; do
	rc=0
	qemu "$timeout" "${accel[@]}" </dev/null || rc=$?
	((attempt == 1 && rc != 124 && ${#extra[@]} == 0)) &&
		[[ ! -f $share/up && ! -f $share/status ]] || break
	say "the guest kernel died before its init ran: booting it once more"
done
if [[ -n $outdir ]]; then
	mkdir -p "$outdir"
	cp "$share"/dmesg "$share"/status "$outdir"/ 2>/dev/null || true
fi
[[ -f $share/status ]] || die "the guest did not finish (timeout ${timeout}s or crash)"
exit "$(cat "$share/status")"
