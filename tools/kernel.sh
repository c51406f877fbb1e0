#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build (once) the guest kernel of one flavour and print its build directory.
#
#   tools/kernel.sh debug     the test kernel (KASAN, lockdep, kmemleak, ...)
#   tools/kernel.sh release   the benchmark kernel
#
# KVER (6.12, the default, or 7.3) picks the kernel source. The build lives
# in $RSOFT_CACHE, keyed by a hash of the config fragments and the toolchain
# versions, so a second call with nothing changed returns at once.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:-debug}
frags=("$RSOFT_TOP/tools/kconfig/base.config" "$RSOFT_TOP/tools/kconfig/$flavour.config")
[[ -f ${frags[1]} ]] || die "unknown kernel flavour '$flavour'"
# What one kernel version needs beyond the common fragments.
[[ -f $RSOFT_TOP/tools/kconfig/$KVER.config ]] && frags+=("$RSOFT_TOP/tools/kconfig/$KVER.config")

key=$( {
	cat "${frags[@]}"
	echo "$RUST_VER $KVER $KSRC_VER $BINDGEN_VER"
	dpkg-query -W "clang-$LLVM_VER" "lld-$LLVM_VER" "llvm-$LLVM_VER" rustc-web
} | sha256sum | cut -c1-12)
ksrc=$RSOFT_CACHE/src-$KSRC_VER/linux-source-$KVER
kdir=$RSOFT_CACHE/kernel-$KVER-$flavour-$key

if [[ -f $kdir/.rsoft-built ]]; then
	echo "$kdir"
	exit 0
fi

if [[ ! -f $ksrc/Makefile ]]; then
	say "unpacking linux-source-$KVER $KSRC_VER"
	rm -rf "${ksrc%/*}"
	mkdir -p "${ksrc%/*}"
	tarball=/usr/src/linux-source-$KVER.tar.xz
	if [[ $KVER != 6.12 ]]; then
		# Not a host package: the pinned upload, unpacked beside the tree.
		debian_unpack "${ksrc%/*}/deb" "linux-source-$KVER=$KSRC_VER"
		tarball=${ksrc%/*}/deb$tarball
	fi
	tar xf "$tarball" -C "${ksrc%/*}"
	rm -rf "${ksrc%/*}/deb"
fi

say "configuring $flavour kernel in $kdir"
rm -rf "$kdir"
mkdir -p "$kdir"
# stdout is the build directory's path alone: make's chatter goes to stderr.
kmake() { make -C "$ksrc" O="$kdir" "${KMAKE_VARS[@]}" LLVM=1 "$@" >&2; }
kmake -s rustavailable
kmake -s tinyconfig
cat "${frags[@]}" > "$kdir/rsoft.config"
"$ksrc/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "$kdir/rsoft.config" >/dev/null
kmake -s olddefconfig

# olddefconfig silently drops what Kconfig does not allow: refuse that.
bad=0
while read -r line; do
	case $line in
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" "$kdir/.config"; then
			say "config: $opt wanted off, is on"
			bad=1
		fi ;;
	CONFIG_*)
		if ! grep -qx "$line" "$kdir/.config"; then
			say "config: '$line' did not survive olddefconfig"
			bad=1
		fi ;;
	esac
done < "$kdir/rsoft.config"
((bad == 0)) || die "kernel config fragment not satisfiable"

say "building $flavour kernel (about 15-25 min on 2 cores; log: $kdir/build.log)"
start=$SECONDS
make -C "$ksrc" O="$kdir" "${KMAKE_VARS[@]}" LLVM=1 -j"$(nproc)" bzImage modules \
	> "$kdir/build.log" 2>&1 &
build=$!
trap 'kill "$build" 2>/dev/null' EXIT
# A quarter of an hour of silence looks like a hang: every 30 s, say how many
# objects the build log shows compiled so far (about 1,500 for a whole build)
# and the latest one.
while kill -0 "$build" 2>/dev/null; do
	for _ in {1..30}; do
		kill -0 "$build" 2>/dev/null || break 2
		sleep 1
	done
	n=$(grep -cE '^  (CC|AS|RUSTC) ' "$kdir/build.log" || true)
	last=$(grep -E '^  (CC|AS|RUSTC) ' "$kdir/build.log" | tail -1 | awk '{print $NF}' || true)
	say "$flavour kernel: $n objects compiled in $((SECONDS - start)) s${last:+ (latest: $last)}"
done
rc=0
wait "$build" || rc=$?
trap - EXIT
if ((rc != 0)); then
	tail -40 "$kdir/build.log" >&2
	die "kernel build failed"
fi
kmake -s INSTALL_MOD_PATH="$kdir/modroot" INSTALL_MOD_STRIP=1 modules_install >/dev/null
say "kernel built in $((SECONDS - start)) s"
touch "$kdir/.rsoft-built"
echo "$kdir"
