#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make run`: boot the guest with rsoft loaded and run CMD there (default: show
# the device through the stock tools). Exits with CMD's status.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kdir=$("$RSOFT_TOP/tools/module.sh")
if [[ -n ${CMD:-} ]]; then
	exec "$RSOFT_TOP/tools/vm.sh" -k "$kdir" ${RSOFT_PARAMS:+-m "$RSOFT_PARAMS"} -- bash -c "$CMD"
fi
exec "$RSOFT_TOP/tools/vm.sh" -k "$kdir" ${RSOFT_PARAMS:+-m "$RSOFT_PARAMS"} -- bash -c '
	set -x
	ibv_devinfo -v -d rsoft0
	ip addr add 10.0.2.15/24 dev eth0
	ip link set eth0 up
	rdma link add rsoft_eth0 type rsoft netdev eth0
	ibv_devices
	ibv_devinfo -d rsoft_eth0
	rdma dev
	rdma link
	# the core fills the GID table from a work item
	timeout 10 sh -c "until cat /sys/class/infiniband/rsoft_eth0/ports/1/gids/* | grep -q ffff:0a00:020f; do sleep 0.2; done"
	rping -s -a 10.0.2.15 -C 3 &
	sleep 1
	rping -c -a 10.0.2.15 -C 3 -v
	wait'
