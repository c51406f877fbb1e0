/* SPDX-License-Identifier: GPL-2.0 */
/* What rsoft advertises (Documentation/rsoft.rst), and helpers for the tests. */
#ifndef RSOFT_SELFTEST_H
#define RSOFT_SELFTEST_H

#include <infiniband/verbs.h>
#include <string.h>

#define RSOFT_DEV		"rsoft0"
#define RSOFT_GUID_BASE		0x02005e0000000000ULL
#define RSOFT_FW_VER		"1.0.0"
#define RSOFT_MAX_PD		4096
#define RSOFT_MAX_QP		4096
#define RSOFT_MAX_QP_WR		16384
#define RSOFT_MAX_SGE		32
#define RSOFT_MAX_CQ		4096
#define RSOFT_MAX_CQE		65535
#define RSOFT_MAX_MR		65536
#define RSOFT_MAX_MR_SIZE	(1ULL << 32)
#define RSOFT_MAX_SRQ		1024
#define RSOFT_MAX_SRQ_WR	16384
#define RSOFT_MAX_AH		4096
#define RSOFT_MAX_RD_ATOM	128
#define RSOFT_MAX_MSG_SIZE	(1U << 31)
#define RSOFT_MAX_INLINE_DATA	512

/* Opens device @name, or returns NULL with errno set. */
static inline struct ibv_context *rsoft_open(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	errno = ENODEV;
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif /* RSOFT_SELFTEST_H */
