// SPDX-License-Identifier: GPL-2.0
/*
 * The machine limits rsoft is measured against, on one CPU:
 *
 *   limits memcpy SIZE   bandwidth of memcpy() of SIZE bytes, MiB/s (the
 *                        unit of perftest's MB/sec)
 *   limits loop SIZE     the same with a plain loop of 8-byte words: under
 *                        TCG, glibc's choice of instructions for a size
 *                        (rep movsb, vector loops) can be the slower one
 *   limits syscall       null system calls (getppid) per second
 *
 * Each runs for about a second and prints one number. A copy of a
 * message-sized block over and over is what a software device does for a
 * stream of such messages: same buffer, same cache footprint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define RUN_NS	1000000000.0

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A memcpy() the compiler may not drop or merge with the next one. */
static void copy_memcpy(void *dst, const void *src, size_t size)
{
	memcpy(dst, src, size);
	asm volatile("" : : "r"(dst), "r"(src) : "memory");
}

static void copy_loop(void *dst, const void *src, size_t size)
{
	unsigned long *d = dst;
	const unsigned long *s = src;

	for (size_t i = 0; i < size / sizeof(*d); i++)
		d[i] = s[i];
	asm volatile("" : : "r"(dst), "r"(src) : "memory");
}

static int bench_copy(void (*copy)(void *, const void *, size_t),
		      size_t size)
{
	double start, elapsed;
	unsigned long n = 0, batch = 1;
	void *src, *dst;

	/*
	 * Page-aligned both: buffers a few bytes apart modulo 4 KiB (as two
	 * malloc() blocks are) make loads alias the previous stores and halve
	 * the rate, which no real copy of a device pays.
	 */
	if (posix_memalign(&src, 4096, size) || posix_memalign(&dst, 4096, size))
		return 1;
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	/* Warm up, and size a batch to ~10 ms so that the clock costs nothing. */
	start = now_ns();
	while (now_ns() - start < RUN_NS / 100) {
		copy(dst, src, size);
		batch++;
	}
	start = now_ns();
	do {
		for (unsigned long i = 0; i < batch; i++)
			copy(dst, src, size);
		n += batch;
		elapsed = now_ns() - start;
	} while (elapsed < RUN_NS);
	printf("%.1f\n", (double)n * size / (1 << 20) / (elapsed / 1e9));
	free(src);
	free(dst);
	return 0;
}

static int bench_syscall(void)
{
	unsigned long n = 0, i;
	double start, elapsed;

	start = now_ns();
	do {
		for (i = 0; i < 10000; i++)
			syscall(SYS_getppid);
		n += i;
		elapsed = now_ns() - start;
	} while (elapsed < RUN_NS);
	printf("%.0f\n", n / (elapsed / 1e9));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "memcpy"))
		return bench_copy(copy_memcpy, strtoul(argv[2], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "loop"))
		return bench_copy(copy_loop, strtoul(argv[2], NULL, 0));
	if (argc == 2 && !strcmp(argv[1], "syscall"))
		return bench_syscall();
	fprintf(stderr, "usage: limits memcpy|loop SIZE | limits syscall\n");
	return 2;
}
