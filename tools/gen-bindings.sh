#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Generate the Rust bindings for include/rsoft_bindings.h with exactly the
# bindgen command line the kernel used for its own rust/bindings, so that
# types, target and C flags (KASAN, -DMODULE, ...) match the kernel build.
#
#   gen-bindings.sh OBJTREE HEADER OUTPUT
set -euo pipefail
objtree=$1 header=$(realpath "$2") out=$(realpath -m "$3")

saved=$objtree/rust/bindings/.bindings_generated.rs.cmd
[[ -f $saved ]] || { echo "$saved missing: kernel built without CONFIG_RUST?" >&2; exit 1; }
cmd=$(sed -n 's/^savedcmd_rust\/bindings\/bindings_generated.rs := //p' "$saved")
cmd=${cmd%%;*}	# drop the kernel's post-processing (a sed on its own output)
eval "set -- $cmd"

bindgen=$1
shift 2	# the kernel's bindings_helper.h
opts=() cflags=()
while (($#)); do
	case $1 in
	-o) shift 2 ;;
	# Newer kernels (7.x) derive pin-init's MaybeZeroable and add CFI
	# encodings for their own bindings crate; neither is usable from an
	# out-of-tree crate, nor needed by rsoft's bindings.
	--with-derive-custom-struct | --with-derive-custom-union) shift 2 ;;
	--with-attribute-custom-enum=*) shift ;;
	--) shift; break ;;
	*) opts+=("$1"); shift ;;
	esac
done
while (($#)); do
	case $1 in
	-Wp,-MMD,*) shift ;;
	*) cflags+=("$1"); shift ;;
	esac
done

cd "$objtree"
"$bindgen" "$header" "${opts[@]}" \
	--allowlist-type '(ib|rdma|iw|uverbs)_.*' \
	--allowlist-function '(_?ib|rdma|rsoft)_.*' \
	--allowlist-var '(IB|RDMA)_.*' \
	--allowlist-type 'netdev_cmd|notifier_block' --allowlist-var 'NOTIFY_.*' \
	-o "$out" -- "${cflags[@]}" -DMODULE -I"$(dirname "$header")"
