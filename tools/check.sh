#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: build what the tests need (debug kernel, rsoft.ko,
# selftests), run the guest test suite under QEMU, the host checks, two
# guests as two machines (tools/twohost.sh) and the run on Debian's stock
# 7.3 kernel (tools/distro.sh), and
# end with "N passed, N failed".
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RSOFT_TOP"

log=$(mktemp "${TMPDIR:-/tmp}/rsoft-check.XXXXXX")
trap 'rm -f "$log"' EXIT
tap() { echo "$1 - $2" | tee -a "$log"; }

start=$SECONDS
# Clippy (CLIPPY=1) compiles the module too: one build, linted. Rebuild the
# crate so that its warnings are seen even when nothing changed.
rm -f rust/rsoft.o
tools/deps.sh || die "installing dependencies failed"
kdir=$(tools/kernel.sh debug) || die "kernel build failed"
build_log=$(mktemp "${TMPDIR:-/tmp}/rsoft-build.XXXXXX")
KDIR=$kdir CLIPPY=1 tools/module.sh >/dev/null 2>"$build_log" || { cat "$build_log"; die "module build failed"; }
ksrc=$(readlink -f "$kdir/source")
make -s -C selftests KSRC="$ksrc" || die "selftest build failed"
module_vars "$kdir"
make -s -C "$kdir" M="$RSOFT_TOP/selftests/kverbs" "${MODULE_VARS[@]}" modules >/dev/null ||
	die "kernel-consumer test module build failed"

# Host-side checks of the tree itself.
if grep -qi 'warning' "$build_log"; then
	tap "not ok" "build: no rustc or clippy warning"
	sed 's/^/# /' "$build_log"
else
	tap ok "build: no rustc or clippy warning"
fi
rm -f "$build_log"
# kmalloc_obj() and its kin, which 7.x's checkpatch asks for, are not in
# 6.12: one source serves both.
if perl "$ksrc/scripts/checkpatch.pl" --no-tree --quiet --ignore ALLOC_WITH_SIZEOF -f include/*.[ch] selftests/*.[ch] selftests/fuzz/*.[ch] selftests/rpma/*.c selftests/roce/*.[ch] selftests/wire/*.[ch] selftests/kverbs/rsoft_kverbs.c selftests/kverbs/ib_find.h tools/bench/kmod/rsoft_pollcq.c >/dev/null; then
	tap ok "checkpatch: C shims and selftests"
else
	tap "not ok" "checkpatch: C shims and selftests"
fi
if /usr/bin/rustfmt --check --edition 2021 --config-path "$ksrc/.rustfmt.toml" rust/rsoft.rs rust/ring.rs tools/ring-test/tests/*.rs >/dev/null 2>&1; then
	tap ok "rustfmt: rust/ is formatted as the kernel's .rustfmt.toml says"
else
	tap "not ok" "rustfmt: rust/ is formatted as the kernel's .rustfmt.toml says"
fi

if out=$(python3 tools/import-cycles.py rust/rsoft.rs 2>&1); then
	tap ok "imports: no cycle between the modules of rust/"
else
	tap "not ok" "imports: no cycle between the modules of rust/"
	sed 's/^/# /' <<<"$out"
fi

say "host tests of the CQ ring (cargo test: model and loom)"
(cd tools/ring-test && cargo test --quiet 2>&1 &&
	RUSTFLAGS="--cfg loom" cargo test --quiet --release --test loom 2>&1) | tee -a "$log"

say "running the guest test suite (debug kernel under QEMU)"
if ! tools/vm.sh -k "$kdir" -n -t 4400 -- selftests/run-guest.sh | tee -a "$log"; then
	tap "not ok" "guest test suite finished"
fi

say "two guests as two machines: NVMe over RDMA across the RoCEv2 wire"
tools/twohost.sh "$kdir" | tee -a "$log"

say "Debian's stock 7.3 kernel: rsoft.ko built against it and tested in its guest (make distro)"
if ! tools/distro.sh | tee -a "$log"; then
	tap "not ok" "Debian stock kernel run finished"
fi

# TAP lines, plus cargo's "test result: ok. N passed; M failed" lines.
cargo_sum() { { sed -n "s/^test result: .* \([0-9]*\) $1.*/\1/p" "$log"; echo 0; } | paste -sd+ | bc; }
passed=$(($(grep -E '^ok ' "$log" | grep -cv '# SKIP') + $(cargo_sum passed)))
skipped=$(grep -E '^ok ' "$log" | grep -c '# SKIP')
failed=$(($(grep -cE '^not ok ' "$log") + $(cargo_sum failed)))
# The failures again at the end, where the tail of a CI log shows them
# (as comments: TAP counts each test once): first what the first five said
# of why (their comment lines that name an error, a crash or stderr, at
# most ten each), then the list.
awk '
	/^not ok / { if (++n > 5) exit; print "# why: " $0; k = 0; open = 1; next }
	!/^#/ { open = 0 }
	open && k < 10 && /stderr|[Ee]rror|ERR|[Ff]ail|[Ss]egmentation|[Tt]ime[d ]*out|BUG|WARN/ {
		print "# why: " $0; k++
	}' "$log"
grep -E '^not ok ' "$log" | head -20 | sed 's/^/# failed: /' || :
say "check took $((SECONDS - start)) s"
if ((skipped)); then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
((failed == 0 && passed > 0))
