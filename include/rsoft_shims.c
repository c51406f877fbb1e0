// SPDX-License-Identifier: GPL-2.0
/* C helpers for what bindgen cannot reach: macros and static inlines. */

#include <linux/moduleparam.h>

#include "rsoft_shims.h"

static unsigned int devices = 1;
module_param(devices, uint, 0444);
MODULE_PARM_DESC(devices, "Number of rsoft devices to register (1-16, default 1)");

unsigned int rsoft_param_devices(void)
{
	return devices;
}
