/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Finding a registered RDMA device by name, as a ULP finds its devices: a
 * client of the RDMA core, whose add callback sees every device. (The 6.12
 * kernel's ib_device_get_by_name() is gone in 7.x.) The device found stays
 * registered until ib_find_end(). For the test modules, one user each.
 */
#ifndef RSOFT_IB_FIND_H
#define RSOFT_IB_FIND_H

#include <linux/string.h>
#include <rdma/ib_verbs.h>

static const char *ib_find_name;
static struct ib_device *ib_find_dev;

static int ib_find_add(struct ib_device *dev)
{
	if (!strcmp(dev_name(&dev->dev), ib_find_name))
		ib_find_dev = dev;
	return 0;
}

static void ib_find_remove(struct ib_device *dev, void *client_data)
{
	if (dev == ib_find_dev)
		ib_find_dev = NULL;
}

static struct ib_client ib_find_client = {
	.name = KBUILD_MODNAME,
	.add = ib_find_add,
	.remove = ib_find_remove,
};

/* The device called @name, or NULL; ib_find_end() either way. */
static inline struct ib_device *ib_find_begin(const char *name)
{
	ib_find_name = name;
	if (ib_register_client(&ib_find_client))
		return NULL;
	return ib_find_dev;
}

static inline void ib_find_end(void)
{
	ib_unregister_client(&ib_find_client);
	ib_find_dev = NULL;
}

#endif /* RSOFT_IB_FIND_H */
