# SPDX-License-Identifier: GPL-2.0
# rsoft: `make` builds rsoft.ko, `make run` shows it in a QEMU guest,
# `make check` runs the tests. The module itself is built by Kbuild; with your
# own kernel: make -C /path/to/kernel/build M=$PWD
#
#   make run CMD='program args'   run a host program in the guest
#   make KDIR=/path/to/build      build against another kernel

export KDIR CMD RSOFT_PARAMS

all:
	@tools/module.sh >/dev/null

run:
	@tools/run.sh

check:
	@tools/check.sh

kernel-release:
	@tools/kernel.sh release

clean:
	@if [ -n "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	rm -f rsoft.ko rsoft_kernel.stamp rust/ib/*_generated.rs
	$(MAKE) -C selftests clean
	rm -f selftests/kverbs/*.ko selftests/kverbs/*.o selftests/kverbs/*.mod*

.PHONY: all run check kernel-release clean
