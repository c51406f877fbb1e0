#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build rsoft.ko against KDIR (default: the cached debug kernel, built on
# first use) and print the kernel build directory used.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$RSOFT_TOP/tools/deps.sh"
kdir=${KDIR:-$("$RSOFT_TOP/tools/kernel.sh" "${KFLAVOUR:-debug}")}
say "building rsoft.ko against $kdir"
module_vars "$kdir"
make -s -C "$kdir" M="$RSOFT_TOP" "${MODULE_VARS[@]}" ${CLIPPY:+CLIPPY=1} modules >&2
echo "$kdir"
