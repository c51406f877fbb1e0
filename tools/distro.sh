#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make distro`: rsoft on Debian's stock 7.3 kernel, unmodified. In a trixie
# root (debootstrap, cached) with the stock kernel packages, the toolchain it
# was built with and trixie's rdma-core: rebuild the kernel's Rust artefacts
# (tools/distro/kbuild.sh), build rsoft.ko and the selftests, boot Debian's
# own vmlinuz in QEMU on that root and run tools/distro/guest.sh there.
# Prints TAP lines and ends with "N passed, N failed".
#
#   tools/distro.sh [-t SECONDS] [-n] [-- COMMAND [ARG...]]
#   tools/distro.sh -b DIR
#
#   -t   give the guest this many seconds (default 1800)
#   -n   do not build rsoft.ko and the selftests (with a COMMAND that does
#        not need them)
#   --   run COMMAND (in the root's copy of the checkout) instead of the test
#   -b   on a Debian machine running a stock kernel, with its headers, its
#        linux-source and its rustc, rust-src and bindgen installed: only
#        rebuild that kernel's Rust artefacts into DIR, a build directory
#        for `make -C DIR M=$PWD`
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The stock kernel and the toolchain it was built with (its .config names
# them); trixie's own, not backports', rustc.
KREL=7.3.4+deb13-amd64
KSERIES=7.3
KPKG_VER=7.3.4-1~bpo13+1
DISTRO_RUSTC_VER=1.85.1+dfsg1-1+deb13u1
DISTRO_BINDGEN_VER=0.71.1-6
DISTRO_GCC_VER=14.2.0-19
PKGS=(
	"linux-image-$KREL=$KPKG_VER" "linux-headers-$KREL=$KPKG_VER"
	"linux-source-$KSERIES=$KPKG_VER" linux-base=4.17~bpo13+1
	"rustc=$DISTRO_RUSTC_VER" "rust-src=$DISTRO_RUSTC_VER"
	"bindgen=$DISTRO_BINDGEN_VER" "rustfmt=$DISTRO_RUSTC_VER" "gcc-14=$DISTRO_GCC_VER"
	make bc flex bison libelf-dev libssl-dev openssl dwarves xz-utils kmod
	initramfs-tools
	busybox-static iproute2 gcc python3
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	libibverbs-dev librdmacm-dev
)

timeout=1800 build=1 boot=1 kbuild_only=""
while getopts t:nb: opt; do
	case $opt in
	t) timeout=$OPTARG ;;
	n) build=0 ;;
	b) kbuild_only=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[[ ${1:-} == -- ]] && shift

if [[ -n $kbuild_only ]]; then
	exec "$RSOFT_TOP/tools/distro/kbuild.sh" "$(uname -r)" "$kbuild_only"
fi

# The root is keyed by the packages, what is made from it by its own
# inputs: a change to the Rust rebuild or the initramfs keeps the root.
key() { sha256sum | cut -c1-12; }
cache=$RSOFT_CACHE/distro-$(printf '%s\n' "${PKGS[@]}" | key)
kbuild_done=$cache/.kbuild-$(key < "$RSOFT_TOP/tools/distro/kbuild.sh")
# What a 9p root needs and the stock kernel keeps in modules.
INITRD_MODULES=(9p 9pnet_virtio virtio_net overlay)
initrd=$cache/initrd-$({ cat "$RSOFT_TOP/tools/distro/initramfs-init"; echo "${INITRD_MODULES[*]}"; } | key).cpio.gz
root=$cache/root
kbuild=/usr/src/linux-rust-$KREL	# in the root
src=/usr/src/rsoft			# the root's copy of the checkout
mkdir -p "$cache"
# One run at a time: each copies the checkout into the root and boots on it.
exec 9>"$cache/.lock"
flock 9

# --- the root's mounts: unmounted on every exit, and nothing is deleted
# under the cache while one is up (a bound /dev).
mounts=()
unmount_all() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
		umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}"
	done
	mounts=()
}
trap unmount_all EXIT
mount_root() {
	((${#mounts[@]} == 0)) || return 0
	mount -t proc proc "$root/proc" && mounts+=("$root/proc")
	mount --bind /sys "$root/sys" && mounts+=("$root/sys")
	mount --bind /dev "$root/dev" && mounts+=("$root/dev")
	mount --bind /dev/pts "$root/dev/pts" && mounts+=("$root/dev/pts")
}
in_root() {
	mount_root
	chroot "$root" /usr/bin/env -i HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
no_mounts_under() {
	! grep -q " $1" /proc/mounts || die "something is mounted under $1"
}

# --- 1. the trixie root with the stock kernel, toolchain and rdma-core
if [[ ! -f $cache/.root-done ]]; then
	command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null ||
		die "installing debootstrap failed"
	debian_apt apt-cache policy >/dev/null	# its sources name the host's archive
	mirror=$(awk '{ print $3; exit }' "$RSOFT_CACHE/apt-trixie/etc/sources.list")
	no_mounts_under "$root"
	rm -rf "$root"
	say "debootstrap trixie into $root"
	t0=$SECONDS
	debootstrap --variant=minbase trixie "$root" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
		{ tail -20 "$cache/debootstrap.log" >&2; die "debootstrap failed"; }
	say "debootstrap took $((SECONDS - t0)) s"
	cp "$RSOFT_CACHE/apt-trixie/etc/sources.list" "$root/etc/apt/sources.list"
	# No daemon starts in a chroot; no initramfs is made for the stock
	# kernel (the guest boots with one of ours; initramfs-tools is there to
	# keep apt from choosing dracut, which cannot be told not to).
	printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	in_root dpkg-divert --local --rename --add /usr/sbin/update-initramfs >/dev/null
	ln -sf /bin/true "$root/usr/sbin/update-initramfs"
	say "installing the stock kernel, its toolchain and rdma-core in the root"
	t0=$SECONDS
	{ in_root apt-get update -q && in_root apt-get install -y -q --no-install-recommends "${PKGS[@]}"; } \
		> "$cache/apt.log" 2>&1 || { tail -30 "$cache/apt.log" >&2; die "installing the packages failed"; }
	in_root apt-get clean
	say "package installation took $((SECONDS - t0)) s"
	touch "$cache/.root-done"
fi

# --- the checkout, copied: a build here must not touch the objects the
# checkout holds for another kernel (Kbuild's rsoft_kernel.stamp would
# rebuild them all on the next build there).
rm -rf "$root$src"
mkdir -p "$root$src"
git -C "$RSOFT_TOP" ls-files -z --cached --others --exclude-standard |
	tar -C "$RSOFT_TOP" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$root$src" -xf -

# --- 2. the stock kernel's Rust artefacts
if [[ ! -f $kbuild_done ]]; then
	t0=$SECONDS
	in_root "$src/tools/distro/kbuild.sh" "$KREL" "$kbuild" || die "rebuilding the Rust artefacts failed"
	say "Rust artefacts of the stock kernel rebuilt in $((SECONDS - t0)) s"
	rm -f "$cache"/.kbuild-*
	touch "$kbuild_done"
fi

log=$(mktemp "${TMPDIR:-/tmp}/rsoft-distro.XXXXXX")
share=$(mktemp -d "${TMPDIR:-/tmp}/rsoft-distro-share.XXXXXX")
trap 'unmount_all; rm -rf "$log" "$share"' EXIT
tap() { echo "$1 - distro: $2" | tee -a "$log"; }

# --- 3. rsoft.ko and the selftests, built in the root against the stock kernel
if ((build)); then
	t0=$SECONDS
	if in_root make -s -C "$kbuild" M="$src" modules > "$cache/module.log" 2>&1; then
		tap ok "rsoft.ko builds against the stock kernel's headers and Rust artefacts"
		say "rsoft.ko built in $((SECONDS - t0)) s"
	else
		tap "not ok" "rsoft.ko builds against the stock kernel's headers and Rust artefacts"
		sed 's/^/# /' "$cache/module.log" | tail -40
		(($#)) || boot=0	# the test has nothing to load
	fi
	out=$src/selftests/build
	if in_root make -s -C "$src/selftests" OUT="$out" KSRC="$kbuild" \
		"$out/cq" "$out/cq_flags" "$out/fuzz/fuzz" > "$cache/selftests.log" 2>&1; then
		tap ok "selftests build against trixie's libibverbs"
	else
		tap "not ok" "selftests build against trixie's libibverbs"
		sed 's/^/# /' "$cache/selftests.log" | tail -40
	fi
fi
unmount_all

# --- 4. an initramfs that loads what a 9p root needs, as the stock kernel
# keeps it in modules, and hands over to tools/guest-init.sh in the root
if [[ ! -f $initrd ]]; then
	rm -f "$cache"/initrd-*
	ird=$(mktemp -d "${TMPDIR:-/tmp}/rsoft-initrd.XXXXXX")
	mkdir -p "$ird"/{bin,dev,proc,sys,newroot,modules}
	cp "$root/usr/bin/busybox" "$ird/bin/busybox"
	cp "$RSOFT_TOP/tools/distro/initramfs-init" "$ird/init"
	chmod 755 "$ird/init"
	moddir=$root/lib/modules/$KREL
	declare -A deps=() seen=()
	while IFS=: read -r m d; do
		deps[$m]=$d
	done < "$moddir/modules.dep"
	n=0
	# A module after everything it depends on.
	load() {
		local m=$1 d
		[[ -n ${seen[$m]:-} ]] && return
		seen[$m]=1
		for d in ${deps[$m]}; do
			load "$d"
		done
		n=$((n + 1))
		xz -dc "$moddir/$m" > "$ird/modules/$(printf %02d $n)-$(basename "$m" .ko.xz).ko"
	}
	for want in "${INITRD_MODULES[@]}"; do
		m=$(grep -o "^[^:]*/$want\.ko\.xz:" "$moddir/modules.dep") || die "no $want module in $moddir"
		load "${m%:}"
	done
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$initrd.new"
	mv "$initrd.new" "$initrd"
	rm -rf "$ird"
fi

# --- 5. boot the stock kernel on the root, read-only, over 9p
boot_guest() {
	{
		printf 'cd %q\n' "$src"
		printf 'RSOFT_TOP=%q\n' "$src"
		echo 'RSOFT_MODULES= RSOFT_LOAD=0 RSOFT_MODARGS='
		printf 'RSOFT_CMD=('
		printf '%q ' "$@"
		printf ')\n'
	} > "$share/env"
	say "booting Debian's vmlinuz-$KREL (TCG, up to $timeout s)"
	# tsc=reliable: TCG's TSC follows the host's clock, but on a busy host
	# the clocksource watchdog sees it skew and marks it unstable; the
	# static key that flips then was seen to oops the other vCPU (int3 in
	# sched_clock_cpu) under multi-threaded TCG.
	# The stock kernel was seen to die at 1.6 s into its boot, long before
	# init, under multi-threaded TCG: a jump into the middle of an
	# instruction in enqueue_timer(), on the RCU thread. As tools/vm.sh
	# does, a guest whose init never ran (no "up" file) is booted once
	# more; a hang, a second such death or any later one fails.
	local attempt rc
	no_mounts_under "$root"
	for attempt in 1 2; do
		t0=$SECONDS rc=0
		timeout --foreground -k 5 "$timeout" qemu-system-x86_64 -accel tcg,thread=multi -cpu max \
			-smp 2 -m 2G -display none -monitor none -serial stdio -no-reboot \
			-kernel "$root/boot/vmlinuz-$KREL" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 oops=panic tsc=reliable rsoft_init=$src/tools/guest-init.sh" \
			-virtfs local,path="$root",mount_tag=distroroot,security_model=none,readonly=on,multidevs=remap \
			-virtfs local,path="$share",mount_tag=rsoftshare,security_model=none \
			-nic user,model=virtio-net-pci </dev/null 2>&1 | sed -u 's/\r$//' |
			tee "$cache/console.log" | sed -u -n '/^rsoft-guest: up/,$p' | tee -a "$log" || rc=$?
		say "guest run took $((SECONDS - t0)) s (console: $cache/console.log)"
		((attempt == 1 && rc != 124)) && [[ ! -f $share/up && ! -f $share/status ]] || break
		say "the stock kernel died before its init ran: booting it once more; its console's tail:"
		tail -40 "$cache/console.log" | sed 's/^/# /'
	done
	cp "$share/dmesg" "$cache/dmesg" 2>/dev/null || true
	if [[ ! -f $share/status ]]; then
		tap "not ok" "the guest finished (timeout ${timeout}s or crash)"
		tail -40 "$cache/console.log" | sed 's/^/# /'
	elif [[ $(cat "$share/status") != 0 ]]; then
		tap "not ok" "the guest command exited $(cat "$share/status")"
	fi
}
(($#)) || set -- "$src/tools/distro/guest.sh"
((boot)) && boot_guest "$@"

passed=$(grep -E '^ok ' "$log" | grep -cv '# SKIP' || true)
failed=$(grep -cE '^not ok ' "$log" || true)
echo "$passed passed, $failed failed"
((failed == 0 && passed > 0))
