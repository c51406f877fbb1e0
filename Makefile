# SPDX-License-Identifier: GPL-2.0
# rsoft: `make` builds rsoft.ko, `make run` shows it in a QEMU guest,
# `make check` runs the tests, `make bench` measures rsoft against rxe, siw
# and the machine in a guest of the benchmark kernel (Documentation/bench/).
# The module itself is built by Kbuild; with your
# own kernel: make -C /path/to/kernel/build M=$PWD
#
#   make run CMD='program args'   run a host program in the guest
#   make fuzz [SEED=..] [SEEDS=..] [OPS=..] [THREADS=..]
#                                 a long verbs fuzzer campaign in the guest
#   make KDIR=/path/to/build      build against another kernel

export KDIR CMD RSOFT_PARAMS SEED SEEDS OPS THREADS

all:
	@tools/module.sh >/dev/null

run:
	@tools/run.sh

check:
	@tools/check.sh

fuzz:
	@tools/fuzz.sh

bench:
	@tools/bench.sh

distro:
	@tools/distro.sh

kernel-release:
	@tools/kernel.sh release

clean:
	@if [ -n "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	rm -f rsoft.ko rsoft_kernel.stamp rust/ib/*_generated.rs
	$(MAKE) -C selftests clean
	rm -f selftests/kverbs/*.ko selftests/kverbs/*.o selftests/kverbs/*.mod*
	rm -rf tools/bench/build
	rm -f tools/bench/kmod/*.ko tools/bench/kmod/*.o tools/bench/kmod/*.mod*

.PHONY: all run check fuzz bench distro kernel-release clean
