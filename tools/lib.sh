# SPDX-License-Identifier: GPL-2.0
# Common settings for rsoft's tools; sourced, never run.

RSOFT_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RSOFT_CACHE=${RSOFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rsoft}

# The toolchain: every version here feeds the kernel cache key.
RUST_VER=1.85.0+dfsg3-1~deb12u3
KSRC_VER=6.12.117-1~deb12u1
LLVM_VER=19
RDMA_CORE_VER=44.0-2
BINDGEN_VER=0.69.5
# rdma_cm users the tests run (not part of the kernel key)
RPMA_VER=1.2.0-1
FABRIC_VER=1.17.0-3
NVME_CLI_VER=2.4+really2.3-3

BINDGEN_ROOT=$RSOFT_CACHE/bindgen-$BINDGEN_VER
export PATH=/usr/lib/llvm-$LLVM_VER/bin:$BINDGEN_ROOT/bin:$PATH:/usr/sbin:/sbin

# Make variables for anything built against the kernel tree.
KMAKE_VARS=(ARCH=x86_64 LLVM=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	HOSTRUSTC=/usr/bin/rustc BINDGEN="$BINDGEN_ROOT/bin/bindgen"
	RUST_LIB_SRC=/usr/src/rustc-1.85.0/library
	RUSTFMT=/usr/bin/rustfmt CLIPPY_DRIVER=/usr/bin/clippy-driver)

say() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die() { say "error: $*"; exit 1; }
