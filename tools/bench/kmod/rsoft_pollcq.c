// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel-side cost of rsoft0's completion path, without a system call
 * in the way: two connected RC QPs, NR zero-length signaled sends from one to
 * the other, so that the send CQ and the receive CQ each hold NR CQEs; then
 * ib_poll_cq() over each, timed with ktime, NR CQEs at a time in batches of
 * 1 and of 16 (what ib_process_cq_direct() and most ULPs ask for). Also
 * timed: ib_post_send() of those sends (rsoft executes a send in its post)
 * and ib_poll_cq() of an empty CQ. Each figure is the median of REPS runs.
 * Then the rate of whole messages (post and poll) of one such pair and of
 * two pairs driven from two CPUs at once: how rsoft scales.
 * For comparison, the kernel's memcpy() of 64 KiB and 1 MiB blocks.
 * And the ICRC's cost per byte, which rsoft's RoCEv2 wire pays on every
 * packet it sends and takes: the kernel's crc32_le(), which rsoft's ICRC
 * (rust/wire/icrc.rs) and rxe's call.
 *
 * Prints "rsoft_pollcq: bench NAME VALUE UNIT" lines, then one TAP line;
 * the load fails if a verb failed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/crc32.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "ib_find.h"
#include "kselftest_module.h"

KSTM_MODULE_GLOBALS();

static char *device = "rsoft0";
module_param(device, charp, 0444);
MODULE_PARM_DESC(device, "RDMA device to measure (default rsoft0)");

static unsigned int nr = 4096;
module_param(nr, uint, 0444);
MODULE_PARM_DESC(nr, "completions per run (default 4096)");

#define REPS		7
#define MAX_BATCH	16
#define EMPTY_POLLS	10000

struct bench {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_qp *a, *b;
	struct ib_wc wc[MAX_BATCH];
};

static struct ib_qp *new_rc_qp(struct bench *b, struct ib_cq *scq,
			       struct ib_cq *rcq)
{
	struct ib_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = nr, .max_recv_wr = nr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(b->pd, &init);
}

static int connect_qp(struct ib_qp *qp, u16 lid, u32 dest_qpn)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_INIT, .port_num = 1 };
	int ret;

	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_4096;
	attr.dest_qp_num = dest_qpn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_dlid(&attr.ah_attr, lid);
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * Posts nr receives on b, then nr sends on a; *recv_ns and *post_ns: the
 * receives' time and the sends'.
 */
static int fill(struct bench *b, u64 *recv_ns, u64 *post_ns)
{
	struct ib_recv_wr rwr = {};
	struct ib_send_wr swr = {
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};
	unsigned int i;
	u64 start;
	int ret;

	start = ktime_get_ns();
	for (i = 0; i < nr; i++) {
		rwr.wr_id = i;
		ret = ib_post_recv(b->b, &rwr, NULL);
		if (ret)
			return ret;
	}
	*recv_ns = ktime_get_ns() - start;
	start = ktime_get_ns();
	for (i = 0; i < nr; i++) {
		swr.wr_id = i;
		ret = ib_post_send(b->a, &swr, NULL);
		if (ret)
			return ret;
	}
	*post_ns = ktime_get_ns() - start;
	return 0;
}

/* Polls nr successful CQEs off @cq, @batch at a time; *ns: the time taken. */
static int drain_cq(struct bench *b, struct ib_cq *cq, int batch, u64 *ns)
{
	unsigned int got = 0;
	u64 start = ktime_get_ns();
	int i, n;

	while (got < nr) {
		n = ib_poll_cq(cq, batch, b->wc);
		if (n <= 0)
			return n ? n : -ENODATA;	/* all CQEs were queued */
		for (i = 0; i < n; i++)
			if (b->wc[i].status != IB_WC_SUCCESS)
				return -EIO;
		got += n;
	}
	*ns = ktime_get_ns() - start;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static u64 median(u64 *v)
{
	sort(v, REPS, sizeof(*v), cmp_u64, NULL);
	return v[REPS / 2];
}

/* Prints a median per-item time of nr (or @items) items, in ns. */
static void report(const char *name, u64 *ns, unsigned int items)
{
	u64 m = median(ns);

	pr_info("bench %s %llu.%02llu ns\n", name, div_u64(m, items),
		div_u64((m % items) * 100, items));
}

static int measure_cq(struct bench *b)
{
	static const int batches[] = { 1, MAX_BATCH };
	u64 recv[REPS], post[REPS], poll[REPS], empty[REPS], start, untimed;
	char name[48];
	int i, r, j, ret;

	for (i = 0; i < ARRAY_SIZE(batches); i++) {
		for (r = 0; r < REPS; r++) {
			ret = fill(b, &recv[r], &post[r]);
			if (!ret)
				ret = drain_cq(b, b->scq, batches[i], &poll[r]);
			if (ret)
				return ret;
			/* The receive side: the same CQEs, not timed twice. */
			ret = drain_cq(b, b->rcq, MAX_BATCH, &untimed);
			if (ret)
				return ret;
		}
		snprintf(name, sizeof(name), "poll_cq_per_cqe_batch%d",
			 batches[i]);
		report(name, poll, nr);
		if (i == 0) {
			report("post_send_per_wr", post, nr);
			report("post_recv_per_wr", recv, nr);
		}
	}
	for (r = 0; r < REPS; r++) {
		start = ktime_get_ns();
		for (j = 0; j < EMPTY_POLLS; j++)
			if (ib_poll_cq(b->scq, 1, b->wc))
				return -EIO;
		empty[r] = ktime_get_ns() - start;
	}
	report("poll_cq_empty_per_call", empty, EMPTY_POLLS);
	return 0;
}

static void bench_free(struct bench *b)
{
	if (!IS_ERR_OR_NULL(b->b))
		ib_destroy_qp(b->b);
	if (!IS_ERR_OR_NULL(b->a))
		ib_destroy_qp(b->a);
	if (!IS_ERR_OR_NULL(b->rcq))
		ib_free_cq(b->rcq);
	if (!IS_ERR_OR_NULL(b->scq))
		ib_free_cq(b->scq);
	if (!IS_ERR_OR_NULL(b->pd))
		ib_dealloc_pd(b->pd);
	kfree(b);
}

/* A PD, two CQs and two RC QPs of @dev connected to each other. */
static struct bench *bench_new(struct ib_device *dev)
{
	struct ib_port_attr port;
	struct bench *b;
	int ret;

	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->dev = dev;
	b->pd = ib_alloc_pd(dev, 0);
	ret = PTR_ERR_OR_ZERO(b->pd);
	/* Polled by us alone: IB_POLL_DIRECT, no completion handler. */
	if (!ret) {
		b->scq = ib_alloc_cq(dev, b, nr, 0, IB_POLL_DIRECT);
		ret = PTR_ERR_OR_ZERO(b->scq);
	}
	if (!ret) {
		b->rcq = ib_alloc_cq(dev, b, nr, 0, IB_POLL_DIRECT);
		ret = PTR_ERR_OR_ZERO(b->rcq);
	}
	if (!ret) {
		b->a = new_rc_qp(b, b->scq, b->rcq);
		ret = PTR_ERR_OR_ZERO(b->a);
	}
	if (!ret) {
		b->b = new_rc_qp(b, b->scq, b->rcq);
		ret = PTR_ERR_OR_ZERO(b->b);
	}
	if (!ret)
		ret = ib_query_port(dev, 1, &port);
	if (!ret)
		ret = connect_qp(b->a, port.lid, b->b->qp_num);
	if (!ret)
		ret = connect_qp(b->b, port.lid, b->a->qp_num);
	if (ret) {
		bench_free(b);
		return ERR_PTR(ret);
	}
	return b;
}

/*
 * Scaling: pairs of QPs (each with its own PD and CQs) driven at once, one
 * kernel thread per pair on its own CPU. Each thread posts nr receives and
 * nr sends and polls both CQs empty, PAIR_ROUNDS times; the figure is the
 * messages of all pairs per second of the slowest.
 */
#define PAIR_ROUNDS	40

struct driver {
	struct bench *b;
	struct completion *go;
	struct completion done;
	u64 ns;
	int ret;
};

static int drive(void *arg)
{
	struct driver *d = arg;
	u64 start, untimed;
	int r, ret = 0;

	wait_for_completion(d->go);
	start = ktime_get_ns();
	for (r = 0; r < PAIR_ROUNDS && !ret; r++) {
		ret = fill(d->b, &untimed, &untimed);
		if (!ret)
			ret = drain_cq(d->b, d->b->scq, MAX_BATCH, &untimed);
		if (!ret)
			ret = drain_cq(d->b, d->b->rcq, MAX_BATCH, &untimed);
	}
	d->ns = ktime_get_ns() - start;
	d->ret = ret;
	/* Not a return into module text that may be gone by then. */
	kthread_complete_and_exit(&d->done, 0);
}

/* Drives @n pairs at once, pair i from CPU i; reports their rate. */
static int measure_pairs(struct bench **pairs, int n, const char *name)
{
	DECLARE_COMPLETION_ONSTACK(go);
	struct driver d[2];
	struct task_struct *t;
	u64 slowest = 0;
	int i, started, ret = 0;

	for (started = 0; started < n; started++) {
		i = started;
		d[i] = (struct driver){ .b = pairs[i], .go = &go };
		init_completion(&d[i].done);
		t = kthread_create(drive, &d[i], "rsoft_bench/%d", i);
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		kthread_bind(t, cpumask_nth(i, cpu_online_mask));
		wake_up_process(t);
	}
	/* The started ones run even after a failure: they use d[]. */
	complete_all(&go);
	for (i = 0; i < started; i++) {
		wait_for_completion(&d[i].done);
		ret = ret ? ret : d[i].ret;
		slowest = max(slowest, d[i].ns);
	}
	if (!ret && slowest)
		pr_info("bench %s %llu msg/s\n", name,
			div64_u64((u64)n * PAIR_ROUNDS * nr * NSEC_PER_SEC,
				  slowest));
	return ret;
}

static int measure_scaling(struct ib_device *dev)
{
	struct bench *pairs[2];
	int ret;

	if (num_online_cpus() < 2)
		return 0;
	pairs[0] = bench_new(dev);
	if (IS_ERR(pairs[0]))
		return PTR_ERR(pairs[0]);
	pairs[1] = bench_new(dev);
	ret = PTR_ERR_OR_ZERO(pairs[1]);
	if (!ret)
		ret = measure_pairs(pairs, 1, "send_rate_1pair");
	if (!ret)
		ret = measure_pairs(pairs, 2, "send_rate_2pairs");
	if (!IS_ERR(pairs[1]))
		bench_free(pairs[1]);
	bench_free(pairs[0]);
	return ret;
}

static int run(struct ib_device *dev)
{
	struct bench *b = bench_new(dev);
	int ret;

	if (IS_ERR(b))
		return PTR_ERR(b);
	ret = measure_cq(b);
	bench_free(b);
	if (!ret)
		ret = measure_scaling(dev);
	return ret;
}

/* The kernel's memcpy() of @size-byte blocks, in MiB/s (perftest's MB/sec). */
static int measure_memcpy(size_t size)
{
	void *src = vmalloc(size), *dst = vmalloc(size);
	u64 start, elapsed, n = 0;
	int i, ret = -ENOMEM;

	if (!src || !dst)
		goto out;
	memset(src, 0x5a, size);
	memset(dst, 0, size);
	start = ktime_get_ns();
	do {
		for (i = 0; i < 16; i++) {
			memcpy(dst, src, size);
			/*
			 * Each copy happens: barrier() alone is not enough,
			 * the compiler knows that nothing else can see a
			 * fresh vmalloc() block, and keeps only the last copy.
			 */
			asm volatile("" : : "r"(dst), "r"(src) : "memory");
		}
		n += i;
		elapsed = ktime_get_ns() - start;
		cond_resched();
	} while (elapsed < 500 * NSEC_PER_MSEC);
	pr_info("bench kernel_memcpy_%zu %llu MB/s\n", size,
		div64_u64(n * size * NSEC_PER_SEC, elapsed) >> 20);
	ret = 0;
out:
	vfree(src);
	vfree(dst);
	return ret;
}

/*
 * ns per byte of crc32_le() over a 4 KiB buffer (rsoft's largest path
 * MTU), as "bench icrc_crc32_le_4k x.yyy ns/B": the median of REPS runs of
 * 100 ms each.
 */
static int measure_crc(void)
{
	u64 ps[REPS], start, elapsed, n;
	u8 *buf = kmalloc(SZ_4K, GFP_KERNEL);
	u32 sum = ~0;
	int r, i;

	if (!buf)
		return -ENOMEM;
	get_random_bytes(buf, SZ_4K);
	for (r = 0; r < REPS; r++) {
		n = 0;
		start = ktime_get_ns();
		do {
			/*
			 * Each call carries on from the last: crc32_le() is
			 * __pure, and calls with the same arguments would be
			 * folded into one (16 times too fast a figure).
			 */
			for (i = 0; i < 16; i++)
				sum = crc32_le(sum, buf, SZ_4K);
			n += i;
			elapsed = ktime_get_ns() - start;
		} while (elapsed < 100 * NSEC_PER_MSEC);
		cond_resched();
		ps[r] = div64_u64(elapsed * 1000, n * SZ_4K);
	}
	/* The sums are used: no call is optimised away. */
	asm volatile("" : : "r"(sum));
	kfree(buf);
	r = median(ps);
	pr_info("bench icrc_crc32_le_4k %d.%03d ns/B\n", r / 1000, r % 1000);
	return 0;
}

static void __init selftest(void)
{
	struct ib_device *dev;
	int ret;

	total_tests++;
	dev = ib_find_begin(device);
	if (!dev) {
		ib_find_end();
		failed_tests++;
		pr_info("not ok 1 - %s not found\n", device);
		return;
	}
	ret = run(dev);
	ib_find_end();
	if (!ret)
		ret = measure_memcpy(SZ_64K);
	if (!ret)
		ret = measure_memcpy(SZ_1M);
	if (!ret)
		ret = measure_crc();
	if (ret)
		failed_tests++;
	pr_info("%sok 1 - poll_cq cost on %s, %u CQEs per run (%d)\n",
		ret ? "not " : "", device, nr, ret);
}

KSTM_MODULE_LOADERS(rsoft_pollcq);
MODULE_DESCRIPTION("rsoft benchmark: kernel-side poll_cq cost per CQE");
MODULE_LICENSE("GPL");
