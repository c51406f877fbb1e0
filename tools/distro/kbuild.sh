#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make a build directory for external Rust modules of one of Debian's stock
# kernels. linux-headers ship the configuration and Module.symvers but none
# of the Rust artefacts (rust/*.rmeta, the proc-macro libraries, the saved
# bindgen command): rebuild those from linux-source with the toolchain the
# kernel was built with, and only those.
#
#   kbuild.sh KERNELRELEASE DIR
#
# Runs on Debian with linux-headers-KERNELRELEASE, linux-source-X.Y and the
# rustc, rust-src and bindgen the kernel's .config names installed (what
# tools/distro.sh's trixie root has). DIR then serves as
# `make -C DIR M=/path/to/module`.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

krel=${1:?usage: kbuild.sh KERNELRELEASE DIR} dir=${2:?usage: kbuild.sh KERNELRELEASE DIR}
headers=/usr/src/linux-headers-$krel
series=$(cut -d. -f1-2 <<<"$krel")
tarball=/usr/src/linux-source-$series.tar.xz
[[ -f $headers/.config ]] || die "$headers/.config missing: install linux-headers-$krel"
[[ -f $tarball ]] || die "$tarball missing: install linux-source-$series (the same upload as the kernel)"
# rustc's version decides the crates' symbol hashes: another one builds, and
# its module then fails to load (Unknown symbol).
want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"/\1/p' "$headers/.config")
have=$(rustc --version 2>/dev/null || true)
[[ $have == "$want" ]] || die "the kernel was built by '$want', rustc here is '${have:-missing}'"
rustc_src=$(rustc --print sysroot)/lib/rustlib/src/rust/library
[[ -d $rustc_src ]] || die "$rustc_src missing: install rust-src of rustc's version"

# DIR is replaced: only an earlier rebuild, or nothing.
if [[ -n $(ls -A "$dir" 2>/dev/null) && ! -f $dir/.rsoft-kbuild ]]; then
	die "$dir is not empty and not an earlier rebuild: not replacing it"
fi
say "unpacking $tarball into $dir"
rm -rf "$dir"
mkdir -p "$dir"
touch "$dir/.rsoft-kbuild"
tar xf "$tarball" -C "$dir" --strip-components=1
# .kernelvariables carries the compiler and release the packages were built
# with (the tree's Makefile reads it); the stock Module.symvers lets modpost
# check a module against the real kernel, vmlinux gives modules its BTF.
cp "$headers"/{.config,.kernelvariables,Module.symvers,vmlinux} "$dir"/

start=$SECONDS
make -C "$dir" -s olddefconfig
# Any difference (a compiler, rustc, bindgen or openssl other than the
# kernel build's) would make artefacts of a kernel other than the stock one.
if ! diff -u <(grep -v '^#' "$headers/.config") <(grep -v '^#' "$dir/.config") >&2; then
	die "olddefconfig changed the stock configuration"
fi
say "building the kernel's Rust artefacts (log: $dir/rust-build.log)"
if ! make -C "$dir" -j"$(nproc)" modules_prepare rust/ > "$dir/rust-build.log" 2>&1; then
	tail -40 "$dir/rust-build.log" >&2
	die "building the Rust artefacts failed"
fi
[[ -f $dir/rust/bindings/.bindings_generated.rs.cmd ]] || die "no saved bindgen command in $dir/rust/bindings"
say "Rust artefacts built in $((SECONDS - start)) s"
