#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the kernel rsoft is built against offers, probed rather than read off
# its version, so that a distribution's backport is seen for what it is.
# Kbuild turns the answers into `--cfg rsoft_have_NAME` for rustc and
# `-DRSOFT_HAVE_NAME` for the C shims; only rust/ib/compat/ and
# include/rsoft_shims.c look at them.
#
#   kernel-features.sh SRCTREE OBJTREE         the features present
#   kernel-features.sh --all                   every feature probed
set -u

# NAME: what rsoft does differently where the kernel has it.
features=(
	# pin-init is a crate of its own, whose initialisers run through
	# raw_try_init() (PinInit::__pinned_init is gone)
	pin_init_raw_try_init
	# str::CStr is core::ffi::CStr, extended by the CStrExt trait
	cstr_ext
	# lock::Backend asks for try_lock and assert_is_held
	lock_backend_try
	# uaccess::UserPtr is a newtype made with from_addr, not a usize
	user_ptr_newtype
	# KVec::pop (its set_len is gone)
	kvec_pop
	# _ib_alloc_device() takes the device's network namespace
	alloc_device_net
	# ib_umem_get() gave way to ib_umem_get_va()
	umem_get_va
	# ib_device_ops.reg_user_mr() takes a DMA handle (struct ib_dmah)
	reg_user_mr_dmah
	# ib_device_ops.resize_cq(int) became resize_user_cq(unsigned int)
	resize_user_cq
)

if [[ ${1:-} == --all ]]; then
	printf '%s\n' "${features[@]}"
	exit 0
fi
src=$1 obj=$2
krate=$obj/rust/libkernel.rmeta
verbs=$src/include/rdma/ib_verbs.h

# The kernel crate's metadata names every public item it has.
in_crate() { grep -qa "$1" "$krate" 2>/dev/null; }

have() {
	case $1 in
	pin_init_raw_try_init) grep -qa raw_try_init "$obj/rust/libpin_init.rmeta" 2>/dev/null ;;
	cstr_ext) in_crate CStrExt ;;
	lock_backend_try) in_crate assert_is_held ;;
	user_ptr_newtype) in_crate from_addr ;;
	kvec_pop) ! in_crate set_len ;;
	alloc_device_net) grep -q '_ib_alloc_device(size_t size, struct net \*net)' "$verbs" ;;
	umem_get_va) grep -q 'ib_umem_get_va(' "$src/include/rdma/ib_umem.h" ;;
	reg_user_mr_dmah) grep -q 'struct ib_dmah \*dmah,' "$verbs" ;;
	resize_user_cq) grep -q '(\*resize_user_cq)' "$verbs" ;;
	esac
}

for f in "${features[@]}"; do
	have "$f" && echo "$f"
done
exit 0
