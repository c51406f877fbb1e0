#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# roce.sh TYPE: RoCEv2 links of link type TYPE (rsoft or rxe) in the guest,
# driven by unmodified rdma-core users: rdma link, ibv_devinfo, async
# events on carrier changes, rdmacm-utils, perftest over rdma_cm, the stock
# pingpongs on the IPv4 RoCEv2 GID, a GID nobody holds (our own test),
# librpma, libfabric's verbs provider,
# rdma-core's pyverbs suite, NVMe over RDMA (nvme-rdma.sh), and link deletion
# under live users. One TAP line per check, like run-guest.sh.
#
# For rsoft the caller has loaded rsoft.ko; for rxe this loads rdma_rxe.
# Where rxe itself cannot do what a test asks, the rxe run prints a SKIP
# with the reason and the rsoft run keeps the assertion.
# ROCE_KERNEL_LOG=0 leaves the kmemleak/dmesg check to the caller.
set -u
type=${1:?usage: roce.sh rsoft|rxe}
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/selftests/build
ip4=10.0.2.15	# QEMU user networking's guest address, as rxe needs
dip4=10.9.9.1	# the dummy netdev of the second link
dev=${type}_eth0
ddev=${type}_dummy0
T=120		# the bound of every single command
work=$(mktemp -d /tmp/roce.XXXXXX)
start=$SECONDS

TAP_PREFIX="$type: " TAP_TIMEOUT=$T
. "$top/selftests/tap.sh"
. "$top/selftests/roce-lib.sh"

[[ ${ROCE_KERNEL_LOG:-1} == 1 && -w /sys/kernel/debug/kmemleak ]] &&
	echo clear > /sys/kernel/debug/kmemleak

# --- the netdevs: eth0 with the address rxe needs, a dummy with its own
ip addr add "$ip4/24" dev eth0 2>/dev/null
ip link set eth0 up
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy
ip addr add "$dip4/24" dev dummy0 2>/dev/null
ip link set dummy0 up
if [[ $type == rxe ]]; then
	check "modprobe rdma_rxe" modprobe rdma_rxe
else
	check "rsoft.ko is loaded" test -d "/sys/module/$type"
fi

# --- two links at once, one per netdev
check "rdma link add $dev type $type netdev eth0" \
	timeout $T rdma link add "$dev" type "$type" netdev eth0
check "rdma link add $ddev type $type netdev dummy0" \
	timeout $T rdma link add "$ddev" type "$type" netdev dummy0
expect "rdma link: $dev on eth0, active" \
	"^link $dev/1 state ACTIVE physical_state LINK_UP netdev eth0 " rdma link
expect "rdma link: $ddev on dummy0, active" \
	"^link $ddev/1 state ACTIVE physical_state LINK_UP netdev dummy0 " rdma link
ip link add roce1 type dummy && ip link set roce1 up
check "rdma link add of a taken name is refused" \
	sh -c "! timeout $T rdma link add $dev type $type netdev roce1 2>/dev/null"
ip link del roce1
expect "ibv_devices lists $dev" "^\s+$dev\s" ibv_devices
expect "ibv_devices lists $ddev" "^\s+$ddev\s" ibv_devices
for d in "$dev" "$ddev"; do
	a=$ip4 nd=eth0
	[[ $d == "$ddev" ]] && a=$dip4 nd=dummy0
	# the netdev's IPv6 link-local address is a GID too
	ll=$(ip -6 -o addr show dev $nd scope link | awk '{ sub("/.*", "", $4); print $4; exit }')
	info=$(timeout $T ibv_devinfo -v -d "$d" 2>&1)
	for re in 'link_layer:\s+Ethernet' 'state:\s+PORT_ACTIVE \(4\)' \
		'phys_state:\s+LINK_UP \(5\)' \
		"GID\[ *[0-9]+\]:\s+::ffff:${a//./\\.}, RoCE v2" \
		"GID\[ *[0-9]+\]:\s+${ll:-no IPv6 link-local address on $nd}, RoCE v2"; do
		if grep -Eq "$re" <<<"$info"; then
			pass "ibv_devinfo -v -d $d: $re"
		else
			fail "ibv_devinfo -v -d $d: $re"
			sed 's/^/# /' <<<"$info"
		fi
	done
done
gidx=$(gid_index "$dev" "$ip4")
dgidx=$(gid_index "$ddev" "$dip4")
if [[ -n $gidx && -n $dgidx ]]; then
	pass "sysfs: RoCE v2 GIDs of $ip4 (index $gidx) and $dip4 (index $dgidx)"
else
	fail "sysfs: RoCE v2 GIDs of $ip4 and $dip4"
	grep -H . /sys/class/infiniband/{"$dev","$ddev"}/ports/1/gids/* \
		/sys/class/infiniband/{"$dev","$ddev"}/ports/1/gid_attrs/types/* 2>&1 |
		grep -v ':0000:0000:0000:0000:0000:0000:0000:0000' | sed 's/^/# /'
	gidx=1 dgidx=1
fi
expect "sysfs: the GID's netdev is eth0" '^eth0$' \
	cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/$gidx"

# --- carrier: the port follows the netdev, with async events
port_state() { # DEV STATE
	ibv_devinfo -d "$1" 2>/dev/null | grep -Eq "state:\s+$2"
}
event_seen() { # FILE EVENT
	grep -q "event_type $2 " "$1"
}
aw=$work/asyncwatch
stdbuf -oL timeout -k 5 $T ibv_asyncwatch -d "$ddev" >"$aw" 2>&1 &
awpid=$!
until_ok 30 grep -q 'async event FD' "$aw"
ip link set dummy0 carrier off
if until_ok 20 event_seen "$aw" IBV_EVENT_PORT_ERR && until_ok 20 port_state "$ddev" PORT_DOWN; then
	pass "carrier off: IBV_EVENT_PORT_ERR, port down"
else
	fail "carrier off: IBV_EVENT_PORT_ERR, port down"
	show "$aw" ibv_asyncwatch
	ibv_devinfo -d "$ddev" 2>&1 | sed 's/^/# /'
fi
ip link set dummy0 carrier on
if until_ok 20 event_seen "$aw" IBV_EVENT_PORT_ACTIVE && until_ok 20 port_state "$ddev" PORT_ACTIVE; then
	pass "carrier on: IBV_EVENT_PORT_ACTIVE, port active"
else
	fail "carrier on: IBV_EVENT_PORT_ACTIVE, port active"
	show "$aw" ibv_asyncwatch
	ibv_devinfo -d "$ddev" 2>&1 | sed 's/^/# /'
fi
kill "$awpid" 2>/dev/null
wait "$awpid" 2>/dev/null
expect "rdma link: $ddev active again" "^link $ddev/1 state ACTIVE " rdma link

# --- rdmacm-utils over the links' IPv4 addresses
srv=(rping -s -a "$ip4" -p 7471 -C 1000)
cli=(rping -c -a "$ip4" -p 7471 -C 1000 -v -V)
pair "rping -C 1000 -v -V ($dev)" cm 7471 rping_data_1000
# -V: the client compares every round trip's data and fails on a mismatch
srv=(rping -s -a "$dip4" -p 7472 -C 50 -S 3000)
cli=(rping -c -a "$dip4" -p 7472 -C 50 -S 3000 -V)
pair "rping -C 50 -S 3000 -V ($ddev)" cm 7472

srv=(ucmatose -b "$ip4" -p 7473 -c 4 -C 20)
cli=(ucmatose -s "$ip4" -p 7473 -c 4 -C 20)
pair "ucmatose -c 4 -C 20" cm 7473 cmatose_done
srv=(ucmatose -b "$dip4" -p 7474 -c 2 -C 10 -S 3000)
cli=(ucmatose -s "$dip4" -p 7474 -c 2 -C 10 -S 3000)
pair "ucmatose -c 2 -S 3000 ($ddev)" cm 7474 cmatose_done
# (udaddy's -p is the port space: it always uses port 7174)
srv=(udaddy -b "$ip4" -c 2 -C 10)
cli=(udaddy -s "$ip4" -c 2 -C 10)
pair "udaddy -c 2 -C 10" cm 7174 cmatose_done
rdma_end() { grep -q 'rdma_client: end 0' "$1/client" && grep -q 'rdma_server: end 0' "$1/server"; }
srv=(rdma_server -s "$ip4" -p 7476)
cli=(rdma_client -s "$ip4" -p 7476)
pair "rdma_server/rdma_client" cm 7476 rdma_end
# rsockets: -T v verifies every byte
stream_done() { grep -A1 'usec/xfer' "$1/client" | tail -1 | grep -Eq ' [0-9.]+s '; }
srv=(rstream -b "$ip4" -p 7477 -S 65536 -C 50 -T v)
cli=(rstream -s "$ip4" -p 7477 -S 65536 -C 50 -T v)
pair "rstream -S 65536 -C 50 -T v" cm 7477 stream_done
srv=(rstream -b "$ip4" -p 7478 -S 1000 -C 200 -T v -T n)
cli=(rstream -s "$ip4" -p 7478 -S 1000 -C 200 -T v -T n)
pair "rstream -S 1000 -C 200 -T v -T n (nonblocking)" cm 7478 stream_done
srv=(riostream -b "$ip4" -p 7479 -S 65536 -C 50 -T v)
cli=(riostream -s "$ip4" -p 7479 -S 65536 -C 50 -T v)
pair "riostream -S 65536 -C 50 -T v" cm 7479 stream_done

# --- perftest with rdma_cm (-R). Every server has a port of its own: the
# listening ID of the one before may still show for a moment after it exits.
port=7490
for t in "ib_send_bw -s 65536 -n 200" "ib_write_bw -s 65536 -n 200" \
	"ib_read_bw -s 65536 -n 200" "ib_send_lat -s 64 -n 200" \
	"ib_write_lat -s 64 -n 200"; do
	read -ra args <<<"$t"
	srv=("${args[@]}" -d "$dev" -R -F -p $port)
	cli=("${args[@]}" -d "$dev" -R -F -p $port "$ip4")
	pair "perftest $t -R" cm $port perf_row
	port=$((port + 1))
done

# --- the stock pingpongs on the IPv4 RoCE v2 GID (QPs exchanged over TCP)
pp() { # NAME DEV GID ARGS...
	local name=$1 d=$2 g=$3
	shift 3
	srv=("$@" -d "$d" -g "$g" -p $port)
	cli=("$@" -d "$d" -g "$g" -p $port localhost)
	pair "$name" tcp $port pp_done
	port=$((port + 1))
}
pp "ibv_rc_pingpong -g $gidx -s 4096 -n 200 -c ($dev)" "$dev" "$gidx" ibv_rc_pingpong -s 4096 -n 200 -c
pp "ibv_rc_pingpong -g $gidx -s 65536 -n 50 -c -e ($dev)" "$dev" "$gidx" ibv_rc_pingpong -s 65536 -n 50 -c -e
pp "ibv_rc_pingpong -g $dgidx -s 4096 -n 200 -c ($ddev)" "$ddev" "$dgidx" ibv_rc_pingpong -s 4096 -n 200 -c
pp "ibv_ud_pingpong -g $gidx -s 512 -n 200 -c ($dev)" "$dev" "$gidx" ibv_ud_pingpong -s 512 -n 200 -c

# --- a GID nobody holds: RC retries run out, UD is dropped
ROCE_DEV=$dev timeout $T "$bin/roce/unreachable"

# --- librpma: read, write, send, send/write with immediate, all verified
rpma_srv=$dev rpma_cli=$dev
srv=("$bin/rpma/rpma_check" server "$ip4" 7482)
cli=("$bin/rpma/rpma_check" client "$ip4" 7482)
pair "librpma: read, write, send, send and write with immediate" cm 7482 rpma_ok

# --- libfabric's verbs provider, msg endpoints (rdma_cm), data checked
srv=(env FI_PROVIDER=verbs fi_pingpong -p verbs -e msg -d "$dev" -I 100 -S 4096 -c -B 7483)
cli=(env FI_PROVIDER=verbs fi_pingpong -p verbs -e msg -d "$dev" -I 100 -S 4096 -c -P 7483 "$ip4")
pair "fi_pingpong -p verbs -e msg -c" tcp 7483 fi_row

# --- pyverbs: rdma-core's whole suite on the RoCE device, rdma_cm tests
# included. Those find a device's address through
# /sys/class/infiniband/DEV/device/net, which a software device without a
# parent device lacks: the copy here asks the GID's netdev then.
t0=$SECONDS
cp -a /usr/share/doc/rdma-core/tests "$work/tests"
gunzip -f "$work"/tests/*.gz
python3 - "$work/tests/base.py" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
old = """        out = subprocess.check_output(['ls',
                                       '/sys/class/infiniband/{}/device/net/'
                                      .format(dev)])
        return out.decode().split('\\n')[0]"""
new = """        if not os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)):
            return open('/sys/class/infiniband/{}/ports/1/gid_attrs/ndevs/0'
                        .format(dev)).read().strip()
""" + old
assert old in s
s = s.replace(old, new)
s = s.replace("""        if not os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)):
            self.args.append([dev, port, idx, None, None])
            return
        net_name""", "        net_name")
open(p, 'w').write(s)
EOF
(cd "$work" && timeout -k 5 2400 python3 "$top/selftests/pyverbs_tap.py" "$work/tests" \
	--dev "$dev" --gid "$gidx") >"$work/pyverbs" 2>&1
rc=$?
sed -e "s/^\(\(not \)\{0,1\}ok\) [0-9]* - /\1 - $type: /" \
	-e '/^\(not \)\{0,1\}ok /!s/^#\{0,1\} \{0,1\}/# /' "$work/pyverbs"
grep -q '^ok [0-9]* - pyverbs test_rdmacm' "$work/pyverbs" ||
	fail "pyverbs test_rdmacm ran (status $rc)"
echo "# pyverbs: $((SECONDS - t0)) s"

# --- NVMe over RDMA: nvmet through configfs, nvme connect, I/O verified
"$top/selftests/nvme-rdma.sh" "$type" "$ip4"
"$top/selftests/srp.sh" "$type" "$ip4"	# SRP: ib_srpt through configfs, ib_srp over rdma_cm

# --- rdma link delete with users still on the devices: the delete must
# finish, the users must see the device go and exit.
t0=$SECONDS
stdbuf -oL timeout -k 5 $T ibv_asyncwatch -d "$ddev" >"$work/holder-aw" 2>&1 &
holder_aw=$!
timeout -k 5 $T ibv_rc_pingpong -d "$ddev" -g "$dgidx" -p 7484 >"$work/holder-pp" 2>&1 &
holder_pp=$!
timeout -k 5 $T rping -s -a "$ip4" -p 7485 >"$work/holder-rs" 2>&1 &
holder_rs=$!
until_ok 60 listening cm 7485 $holder_rs
# a connection that keeps pinging until the device goes
timeout -k 5 $T rping -c -a "$ip4" -p 7485 >"$work/holder-rc" 2>&1 &
holder_rc=$!
until_ok 60 grep -q 'async event FD' "$work/holder-aw"
until_ok 60 tcp_listening 7484
until_ok 60 sh -c "rdma res show cm_id | grep -q 'state CONNECT.*comm rping'"
rdma res show cm_id | sed 's/^/# before delete: /'
check "users of both links: asyncwatch, rc_pingpong server, rping pair" \
	sh -c "kill -0 $holder_aw && kill -0 $holder_pp && kill -0 $holder_rs && kill -0 $holder_rc"
alive() { kill -0 "$1" 2>/dev/null; }
gone() { ! alive "$1"; }
timeout -k 5 $T rdma link delete "$ddev" >"$work/delete-$ddev" 2>&1 &
del_d=$!
timeout -k 5 $T rdma link delete "$dev" >"$work/delete-$dev" 2>&1 &
del_e=$!
both_gone() { gone "$del_d" && gone "$del_e"; }
if until_ok 20 both_gone; then
	deleted=1
else
	deleted=0
fi
stop_holders() {
	kill "$holder_aw" "$holder_pp" "$holder_rs" "$holder_rc" 2>/dev/null
}
if ((deleted == 0)) && [[ $type == rxe ]]; then
	# rxe has no disassociate_ucontext: the core's unregistration waits
	# until every process that has the device open exits by itself.
	skip "rdma link delete under live users finishes" \
		"rxe has no disassociate_ucontext: the delete waits for its users to exit (seen: still waiting after 20 s)"
	for f in holder-aw holder-pp holder-rs holder-rc; do show "$work/$f" "$f"; done
	stop_holders
	check "rdma link delete finishes once the users are killed" until_ok 60 both_gone
elif ((deleted == 0)); then
	fail "rdma link delete of both links under live users finishes (still waiting after 20 s)"
	for f in holder-aw holder-pp holder-rs holder-rc; do show "$work/$f" "$f"; done
	stop_holders
	check "rdma link delete finishes once the users are killed" until_ok 60 both_gone
else
	pass "rdma link delete of both links under live users finishes"
	wait "$del_d"
	rd=$?
	wait "$del_e"
	re=$?
	check "rdma link delete succeeded (status $rd and $re)" test "$rd$re" = 00
	show "$work/delete-$ddev" "delete $ddev"
	show "$work/delete-$dev" "delete $dev"
	# ibv_asyncwatch sees IBV_EVENT_DEVICE_FATAL, the end of the event
	# stream (the core keeps the FD open for it, so the tool, which reads
	# on, would wait forever: it is stopped below).
	if until_ok 30 event_seen "$work/holder-aw" IBV_EVENT_DEVICE_FATAL; then
		pass "ibv_asyncwatch saw IBV_EVENT_DEVICE_FATAL"
	else
		fail "ibv_asyncwatch saw IBV_EVENT_DEVICE_FATAL"
		show "$work/holder-aw" ibv_asyncwatch
	fi
	# rping's connection saw the device go (DEVICE_REMOVAL or errors).
	if until_ok 30 gone "$holder_rs" && until_ok 30 gone "$holder_rc"; then
		pass "a running rping's server and client exited"
	else
		fail "a running rping's server and client exited"
	fi
	show "$work/holder-rs" "rping server"
	show "$work/holder-rc" "rping client"
	# The waiting ibv_rc_pingpong server: its next verb fails.
	if alive "$holder_pp"; then
		{ echo "0001:000011:000001:00000000000000000000ffff0a090901" >/dev/tcp/127.0.0.1/7484; } 2>/dev/null
		if until_ok 30 gone "$holder_pp" && ! wait "$holder_pp"; then
			pass "a waiting ibv_rc_pingpong server's next verb fails"
		else
			fail "a waiting ibv_rc_pingpong server's next verb fails"
		fi
		show "$work/holder-pp" ibv_rc_pingpong
	else
		fail "a waiting ibv_rc_pingpong server's next verb fails (it exited before it was asked)"
		show "$work/holder-pp" ibv_rc_pingpong
	fi
	stop_holders
fi
wait 2>/dev/null
expect "no link left" '^$' sh -c "rdma link show | grep -E '^link ($dev|$ddev)/' || true"
check "no device left" sh -c "! ls /sys/class/infiniband | grep -Eq '^($dev|$ddev)$'"
echo "# link delete: $((SECONDS - t0)) s"

# --- the links come back after a delete
check "rdma link add again, then delete" sh -c \
	"timeout $T rdma link add $dev type $type netdev eth0 && timeout $T rdma link delete $dev"
[[ $type == rxe ]] && check "modprobe -r rdma_rxe" modprobe -r rdma_rxe

echo "# roce.sh $type: $((SECONDS - start)) s"
rm -rf "$work"
[[ ${ROCE_KERNEL_LOG:-1} == 1 ]] && "$top/selftests/kernel-log.sh"
exit 0
