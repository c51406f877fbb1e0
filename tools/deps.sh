#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the pinned host packages and bindgen-cli. Idempotent: a second run
# only checks versions.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKGS=(
	"linux-source-6.12=$KSRC_612_VER"
	"rustc-web=$RUST_VER" "rust-web-src=$RUST_VER" "libstd-rust-web-dev=$RUST_VER"
	"rust-web-clippy=$RUST_VER" "rustfmt-web=$RUST_VER"
	"clang-$LLVM_VER" "libclang-$LLVM_VER-dev" "lld-$LLVM_VER" "llvm-$LLVM_VER"
	bc flex bison libelf-dev libssl-dev cpio xz-utils make kmod gcc
	qemu-system-x86 busybox-static iproute2 strace dmsetup tcpdump tshark
	"ibverbs-utils=$RDMA_CORE_VER" "ibverbs-providers=$RDMA_CORE_VER"
	"libibverbs1=$RDMA_CORE_VER" "libibverbs-dev=$RDMA_CORE_VER"
	"rdma-core=$RDMA_CORE_VER" "python3-pyverbs=$RDMA_CORE_VER" perftest
	"rdmacm-utils=$RDMA_CORE_VER" "librdmacm-dev=$RDMA_CORE_VER"
	"librpma-dev=$RPMA_VER" "libfabric-bin=$FABRIC_VER" "nvme-cli=$NVME_CLI_VER"
)

missing=()
for p in "${PKGS[@]}"; do
	name=${p%%=*}
	want=${p#*=}
	have=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$name" 2>/dev/null || true)
	if [[ $have != ii* ]] || { [[ $p == *=* ]] && [[ ${have:3} != "$want" ]]; }; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	say "installing ${#missing[@]} packages: ${missing[*]}"
	# apt's own temp dir has vanished mid-install on this machine kind.
	export TMPDIR=$RSOFT_CACHE/tmp DEBIAN_FRONTEND=noninteractive
	mkdir -p "$TMPDIR"
	apt-get update -q >/dev/null
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
		dpkg --configure -a
		apt-get install -y -q --no-install-recommends "${missing[@]}"
	fi
fi

if [[ ! -x $BINDGEN_ROOT/bin/bindgen ]]; then
	say "building bindgen-cli $BINDGEN_VER (cargo install, ~2 min)"
	LIBCLANG_PATH=/usr/lib/llvm-$LLVM_VER/lib cargo install -q bindgen-cli \
		--version "$BINDGEN_VER" --locked --root "$BINDGEN_ROOT"
fi
say "host dependencies ready"
