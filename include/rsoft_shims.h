/* SPDX-License-Identifier: GPL-2.0 */
/* C helpers for what bindgen cannot reach: macros and static inlines. */
#ifndef RSOFT_SHIMS_H
#define RSOFT_SHIMS_H

#include <linux/types.h>

/* module_param() is a macro: the parameters live on the C side. */
unsigned int rsoft_param_devices(void);

#endif /* RSOFT_SHIMS_H */
