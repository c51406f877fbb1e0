# SPDX-License-Identifier: GPL-2.0
# Sourced by the guest's test scripts: one TAP line per check ("ok"/"not
# ok" at the start of a line, which tools/check.sh counts). TAP_PREFIX
# starts every check's name (roce.sh: "rsoft: "); with TAP_TIMEOUT set,
# expect gives its command that many seconds.

pass() { echo "ok - ${TAP_PREFIX:-}$*"; }
fail() { echo "not ok - ${TAP_PREFIX:-}$*"; }
skip() { echo "ok - ${TAP_PREFIX:-}$1 # SKIP $2"; }
# check NAME COMMAND...: one TAP line from a command's exit status.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name"; fi
}
# expect NAME REGEX COMMAND...: the command succeeds and prints REGEX.
expect() {
	local name=$1 re=$2 out
	shift 2
	if out=$(${TAP_TIMEOUT:+timeout "$TAP_TIMEOUT"} "$@" 2>&1) &&
		grep -Eq -- "$re" <<<"$out"; then
		pass "$name"
	else
		fail "$name"
		sed 's/^/# /' <<<"$out"
	fi
}
# nap SECONDS: a sleep that starts no process (a process costs the debug
# TCG guest half a second, a polling loop's sleep included): read waits
# that long on a pipe whose writer this shell holds itself.
exec {nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$nap_fd" || :; }
# until_ok SECONDS COMMAND...: runs the command every 0.2 s until it
# succeeds; fails once SECONDS have passed.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		nap 0.2
	done
}
# tcp_listening PORT: a TCP socket of this namespace listens on PORT.
tcp_listening() { # (read by the shell itself: no process per look)
	local hex line f
	printf -v hex ':%04X ' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		while read -r line; do
			[[ $line == *"$hex"*" 0A "* ]] && return 0
		done <"$f"
	done
	return 1
}
