# SPDX-License-Identifier: GPL-2.0
# Common settings for rsoft's tools; sourced, never run.

RSOFT_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RSOFT_CACHE=${RSOFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsoft}

# The toolchain: every version here feeds the kernel cache key.
RUST_VER=1.85.0+dfsg3-1~deb12u3
LLVM_VER=19
# The kernel the project's own guests run (KVER=6.12 or 7.3): 6.12 LTS from
# bookworm's linux-source-6.12, 7.3 from trixie-backports' linux-source-7.3
# (downloaded through debian_apt, not installed on the host).
KSRC_612_VER=6.12.117-1~deb12u1
KVER=${KVER:-6.12}
case $KVER in
6.12) KSRC_VER=$KSRC_612_VER ;;
7.3) KSRC_VER=7.3.4-1~bpo13+1 ;;
*) echo "KVER=$KVER: rsoft's own kernels are 6.12 and 7.3" >&2; exit 1 ;;
esac
RDMA_CORE_VER=44.0-2
BINDGEN_VER=0.71.1
# rdma_cm users the tests run (not part of the kernel key)
RPMA_VER=1.2.0-1
FABRIC_VER=1.17.0-3
NVME_CLI_VER=2.4+really2.3-3

BINDGEN_ROOT=$RSOFT_CACHE/bindgen-$BINDGEN_VER
export PATH=/usr/lib/llvm-$LLVM_VER/bin:$BINDGEN_ROOT/bin:$PATH:/usr/sbin:/sbin

# Make variables for anything built against the kernel tree. The project's
# own kernels are built with LLVM=1 (KASAN with Rust needs clang); see
# module_vars for what is built against a kernel.
KMAKE_VARS=(ARCH=x86_64 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	HOSTRUSTC=/usr/bin/rustc BINDGEN="$BINDGEN_ROOT/bin/bindgen"
	RUST_LIB_SRC=/usr/src/rustc-1.85.0/library
	RUSTFMT=/usr/bin/rustfmt CLIPPY_DRIVER=/usr/bin/clippy-driver)

# debian_apt ARGS...: apt-get (or, as apt-cache, the look-ups) with a private
# configuration for trixie and trixie-backports, so that their packages can
# be downloaded without touching the host's sources. The archive is the one
# the host's own sources name.
debian_apt() {
	local root=$RSOFT_CACHE/apt-trixie tool=apt-get
	[[ $1 == apt-cache ]] && { tool=apt-cache; shift; }
	if [[ ! -f $root/apt.conf ]]; then
		local mirror
		mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
		[[ -n $mirror ]] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)
		[[ -n $mirror ]] || die "no Debian archive in the host's apt sources"
		mkdir -p "$root"/{etc/apt.conf.d,etc/preferences.d,etc/sources.list.d,lists/partial,archives/partial}
		touch "$root/status"
		for suite in trixie trixie-updates trixie-backports; do
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main"
		done > "$root/etc/sources.list"
		cat > "$root/apt.conf.new" <<-EOF
			Dir::Etc "$root/etc";
			Dir::State "$root";
			Dir::State::Lists "$root/lists";
			Dir::State::status "$root/status";
			Dir::Cache "$root";
			Dir::Cache::archives "$root/archives";
			APT::Architecture "amd64";
			APT::Sandbox::User "root";
		EOF
		APT_CONFIG=$root/apt.conf.new apt-get update -q >/dev/null || die "apt-get update (trixie) failed"
		mv "$root/apt.conf.new" "$root/apt.conf"
	fi
	APT_CONFIG=$root/apt.conf "$tool" "$@"
}

# debian_unpack DIR PKG=VER...: download these trixie(-backports) packages
# and unpack them into DIR (dpkg-deb -x: no scripts run, nothing installed).
debian_unpack() {
	local dir=$1 dl
	shift
	dl=$(mktemp -d "${TMPDIR:-/tmp}/rsoft-deb.XXXXXX")
	(cd "$dl" && debian_apt download -q "$@" >/dev/null) || { rm -rf "$dl"; die "downloading $* failed"; }
	mkdir -p "$dir"
	for deb in "$dl"/*.deb; do
		dpkg-deb -x "$deb" "$dir"
	done
	rm -rf "$dl"
}

# module_vars KDIR: sets MODULE_VARS, the make variables for an external
# module of the kernel in KDIR, which is built by that kernel's own C
# compiler: clang (LLVM=1) or, as distributions build theirs, GCC.
module_vars() {
	MODULE_VARS=("${KMAKE_VARS[@]}")
	if grep -qs '^CONFIG_CC_IS_CLANG=y' "$1/.config"; then
		MODULE_VARS+=(LLVM=1)
	fi
}

say() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
