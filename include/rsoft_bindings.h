/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C API rsoft's Rust `ib` layer is generated from (by bindgen, with the
 * kernel's own bindgen flags; see tools/gen-bindings.sh).
 */
#ifndef RSOFT_BINDINGS_H
#define RSOFT_BINDINGS_H

#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/rdma_netlink.h>

#include "rsoft_shims.h"

#endif /* RSOFT_BINDINGS_H */
