#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# pyverbs.sh [TEST...]: unpacks rdma-core's pyverbs test suite (shipped
# partly gzipped by python3-pyverbs) and runs it against rsoft0, printing
# TAP (selftests/pyverbs_tap.py).
set -eu
here=$(dirname "$(readlink -f "$0")")
src=/usr/share/doc/rdma-core/tests
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp -a "$src" "$dir/tests"
gunzip -f "$dir"/tests/*.gz
cd "$dir"
python3 "$here/pyverbs_tap.py" "$dir/tests" --dev rsoft0 "$@"
