#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# nvme-rdma.sh TYPE [ADDR]: NVMe over RDMA through a RoCE link of link type
# TYPE (rsoft or rxe) on the netdev that holds ADDR (default 10.0.2.15 on
# eth0), target and host on this machine (selftests/nvme-lib.sh): the host
# writes and reads back through the device, the target's file holds the
# same bytes, and the target is torn down. One TAP line per check.
#
# roce.sh runs it while its links exist; run alone, it adds (and deletes)
# a link ${TYPE}_eth0 itself.
set -u
type=${1:?usage: nvme-rdma.sh rsoft|rxe [ADDR]}
addr=${2:-10.0.2.15}
T=120
nqn=nqn.2014-08.org.rsoft:roce-$type
work=$(mktemp -d /dev/shm/nvme-rdma.XXXXXX)	# tmpfs
start=$SECONDS

TAP_PREFIX="$type: nvme-rdma: "
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/nvme-lib.sh"

own_link=
if ! rdma link show | grep -q "netdev eth0"; then
	ip addr add "$addr/24" dev eth0 2>/dev/null
	ip link set eth0 up
	[[ $type == rxe ]] && modprobe rdma_rxe
	own_link=${type}_eth0
	run "rdma link add $own_link" rdma link add "$own_link" type "$type" netdev eth0 || exit 0
fi

target_up "$addr" "$work/ns1.img"
host_io "$addr"
target_holds "$work/ns1.img" "$work"
target_down
[[ -n $own_link ]] && run "rdma link delete $own_link" rdma link delete "$own_link"
rm -rf "$work"
echo "# nvme-rdma.sh $type: $((SECONDS - start)) s"
exit 0
