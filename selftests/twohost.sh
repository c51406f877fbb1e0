#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# twohost.sh target|host: one of the two guests that tools/twohost.sh runs
# as two machines, joined by an Ethernet segment of their own (eth1), with
# /run/peer shared between them for their meeting points. NVMe over RDMA
# from one to the other (selftests/nvme-lib.sh), over the RoCEv2 wire: the
# target at 10.9.6.2, the host at 10.9.6.1, in three rounds: an rsoft
# target with an rxe host, then with an rsoft host, and an rxe target with
# an rsoft host. The kernel's NVMe target and host use rdma_cm in init_net
# only, so two namespaces of one machine cannot play these roles; two
# machines can. In each round, the host writes and reads back through the
# namespace and leaves its data in /run/peer, and the target checks that
# its file holds it; both then delete their links. Ends with the kernel
# log's checks (kernel-log.sh).
set -u
role=${1:?usage: twohost.sh target|host}
T=120
nqn=nqn.2014-08.org.rsoft:twohost
peer=/run/peer
work=$(mktemp -d /dev/shm/twohost.XXXXXX)
here=$(dirname "$0")
rounds=(rsoft:rxe rsoft:rsoft rxe:rsoft)	# target:host

TAP_PREFIX="two hosts: $role: "
. "$here/tap.sh"
. "$here/nvme-lib.sh"

if [[ ! -d $peer ]] || ! ip link set eth1 up; then
	fail "eth1 and /run/peer (tools/vm.sh -w and -s)"
	exit 0
fi
addr=10.9.6.1
[[ $role == target ]] && addr=10.9.6.2
ip addr add $addr/24 dev eth1

# link_up TYPE: this machine's link of TYPE on eth1, rsoft_t or rxe_h say.
link_up() {
	[[ $1 == rxe ]] && modprobe rdma_rxe
	link=${1}_${role:0:1}
	run "rdma link add $link type $1 netdev eth1" rdma link add "$link" type "$1" netdev eth1
}
# link_down TYPE: the link goes; so does rxe, which holds UDP port 4791 of
# init_net while it is loaded (6.12), where rsoft's next link would not
# receive.
link_down() {
	run "rdma link delete $link" rdma link delete "$link"
	[[ $1 == rxe ]] && run "modprobe -r rdma_rxe" modprobe -r rdma_rxe
}

echo "# time: up: $SECONDS s"
for i in "${!rounds[@]}"; do
	t=${rounds[i]%:*} h=${rounds[i]#*:} t0=$SECONDS
	TAP_PREFIX="two hosts, $t target, $h host: $role: "
	if [[ $role == target ]]; then
		if link_up "$t" && target_up 10.9.6.2 "$work/ns1.img"; then
			touch "$peer/ready-$i"
		else
			touch "$peer/failed-$i"
		fi
		if until_ok 600 test -e "$peer/done-$i"; then
			target_holds "$work/ns1.img" "$peer/$i"
		else
			fail "the host finished"
		fi
		if [[ $t == rsoft ]]; then
			rcvd=$(rdma statistic show link "$link/1" | grep -o ' wire_received_packets [0-9]*')
			run "$link took its host's requests off the wire (${rcvd# })" \
				test "${rcvd##* }" -gt 5000
		fi
		target_down
		link_down "$t"
		touch "$peer/down-$i"
	else
		until_ok 600 test -e "$peer/ready-$i" -o -e "$peer/failed-$i"
		if [[ ! -e $peer/ready-$i ]]; then
			fail "the target is ready"
		elif link_up "$h"; then
			host_io 10.9.6.2
			mkdir -p "$peer/$i"
			cp "$work/a" "$work/b" "$peer/$i/"
			link_down "$h"
		fi
		touch "$peer/done-$i"
		# The target's link goes before the next round's comes.
		until_ok 600 test -e "$peer/down-$i"
	fi
	echo "# time: $t target, $h host: $((SECONDS - t0)) s"
done
rm -rf "$work"
"$here/kernel-log.sh" | sed "s/^\(ok\|not ok\) - /\1 - two hosts: $role: /"
exit 0
