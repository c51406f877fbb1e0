#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# pingpong.sh NAME TOOL [ARG...]: runs a stock client/server verbs tool
# (ibv_*_pingpong, perftest) as two processes on rsoft0 and prints one TAP
# line.
name=$1 tool=$2
shift 2
. "$(dirname "$0")/tap.sh"
# Below the kernel's ephemeral ports (32768 on): a port that a client
# socket of an earlier run left in TIME_WAIT refuses the listen.
port=$((20000 + RANDOM % 12000))
# (Fixed names, overwritten each run: a process costs the debug TCG guest
# half a second, mktemp and rm included.)
dir=/tmp/rsoft-pingpong
[[ -d $dir ]] || mkdir "$dir"

# The client does not retry: wait until the server listens on the port.
timeout 900 "$tool" -d rsoft0 -p "$port" "$@" >"$dir/server" 2>&1 &
server=$!
for _ in {1..600}; do
	tcp_listening "$port" && break
	kill -0 $server 2>/dev/null || break
	nap 0.1
done
timeout 900 "$tool" -d rsoft0 -p "$port" "$@" localhost >"$dir/client" 2>&1
client_rc=$?
wait $server
server_rc=$?
# The tools decide to send from completed sends, so one side may still have
# a send in flight when the other, done with all its iterations, destroys
# its QPs: nobody answers that send, and it fails once its retries run out,
# as it would on any RC device.
first_done() { # FINISHED OTHER: FINISHED is done, OTHER's last send failed
	grep -q 'iters in' "$dir/$1" &&
		grep -q 'transport retry counter exceeded' "$dir/$2"
}
end_race() {
	{ ((client_rc != 0 && server_rc == 0)) && first_done server client; } ||
		{ ((client_rc == 0 && server_rc != 0)) && first_done client server; }
}
if ((client_rc == 0 && server_rc == 0)); then
	echo "ok - $name"
	# ibv_*_pingpong's rate, or perftest's header and result row.
	grep -h -e 'iters in' -A1 -e '^ *#bytes' "$dir/client" | grep -v '^--' | sed 's/^/# /'
elif end_race; then
	echo "ok - $name # SKIP one side finished first; the other's last send found no QP and ran out of retries"
else
	echo "not ok - $name (client $client_rc, server $server_rc)"
	sed 's/^/# client: /' "$dir/client"
	sed 's/^/# server: /' "$dir/server"
fi
