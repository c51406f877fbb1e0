// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel consumer of rsoft0 (a kverbs ULP in miniature): for each CQ poll
 * context (direct, softirq, workqueue) it connects two RC QPs, moves
 * NMSG messages and checks that every completion arrives exactly once
 * through its ib_cqe.done, with the data intact, then drains the QPs.
 * Only WINDOW sends are posted up front; each send's done handler posts
 * the next one, from whatever context the CQ polls in. One more run
 * takes the receives from an SRQ, whose ib_drain_qp() waits for the Last
 * WQE Reached event.
 * The last checks post refused WR lists and read bad_wr, make an RC QP
 * complete in error, defer a large post made with IRQs off, send inline
 * data, and use fast registration: REG_MR, LOCAL_INV, SEND_WITH_INV.
 * Runs at load; prints one TAP line per check and fails the load if any
 * check failed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/stringify.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "ib_find.h"
#include "kselftest_module.h"

KSTM_MODULE_GLOBALS();

#define DEVICE_NAME	"rsoft0"
#define NMSG		512
#define MSG_LEN		64
#define WINDOW		16

struct kverbs_run;

struct msg {
	struct ib_cqe cqe;
	struct kverbs_run *run;
	atomic_t done;		/* how often ->done ran for it */
};

struct kverbs_run {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *a, *b;
	struct ib_srq *srq;	/* b's receives, or NULL */
	u8 *buf;		/* NMSG send slots, then NMSG receive slots */
	u64 dma;
	struct msg send[NMSG], recv[NMSG];
	/*
	 * Index of the next send to post, taken and posted under post_lock:
	 * the post of send i must not be overtaken by that of send i + 1,
	 * whose done handler may run in softirq between the two, or the
	 * messages land in other receives than their index says.
	 */
	spinlock_t post_lock;
	int next_send;
	atomic_t completions, errors;
	struct completion all_done;
};

static int post_send_one(struct kverbs_run *run, int i)
{
	struct ib_sge sge = {
		.addr = run->dma + i * MSG_LEN,
		.length = MSG_LEN, .lkey = run->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &run->send[i].cqe, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(run->a, &wr, NULL);
}

/* Posts the next send, if any is left; returns 0 or an errno. */
static int post_next(struct kverbs_run *run)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&run->post_lock, flags);
	if (run->next_send < NMSG)
		ret = post_send_one(run, run->next_send++);
	spin_unlock_irqrestore(&run->post_lock, flags);
	return ret;
}

static void msg_done(struct ib_wc *wc, bool recv)
{
	struct msg *m = container_of(wc->wr_cqe, struct msg, cqe);
	struct kverbs_run *run = m->run;

	if (wc->status != IB_WC_SUCCESS || (recv && wc->byte_len != MSG_LEN))
		atomic_inc(&run->errors);
	atomic_inc(&m->done);
	if (atomic_inc_return(&run->completions) == 2 * NMSG)
		complete(&run->all_done);
}

static void send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kverbs_run *run = container_of(wc->wr_cqe, struct msg, cqe)->run;

	if (wc->status == IB_WC_SUCCESS && post_next(run))
		atomic_inc(&run->errors);
	msg_done(wc, false);
}

static void recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	msg_done(wc, true);
}

/*
 * An RC QP of @depth WRs with one SGE each and @max_inline bytes of inline
 * data, receiving from @srq if set.
 */
static struct ib_qp *new_rc_qp(struct ib_pd *pd, struct ib_cq *cq,
			       struct ib_srq *srq, u32 depth, u32 max_inline)
{
	struct ib_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.srq = srq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = max_inline },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(pd, &init);
}

static struct ib_qp *create_qp(struct kverbs_run *run, struct ib_srq *srq)
{
	/* One more WR of each kind for ib_drain_qp(). */
	return new_rc_qp(run->pd, run->cq, srq, NMSG + 1, 0);
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

static int post_all(struct kverbs_run *run, int ctx)
{
	u32 lkey = run->pd->local_dma_lkey;
	int i, ret;

	for (i = 0; i < NMSG; i++) {
		struct ib_sge sge = {
			.addr = run->dma + (NMSG + i) * MSG_LEN,
			.length = MSG_LEN, .lkey = lkey,
		};
		struct ib_recv_wr wr = {
			.wr_cqe = &run->recv[i].cqe, .sg_list = &sge, .num_sge = 1,
		};

		if (run->srq)
			ret = ib_post_srq_recv(run->srq, &wr, NULL);
		else
			ret = ib_post_recv(run->b, &wr, NULL);
		if (ret)
			return ret;
	}
	for (i = 0; i < NMSG; i++)
		memset(run->buf + i * MSG_LEN, i + ctx, MSG_LEN);
	/* The rest is posted by send_done(). */
	for (i = 0; i < WINDOW; i++) {
		ret = post_next(run);
		if (ret)
			return ret;
	}
	return 0;
}

/* Waits until all 2 * NMSG completions ran, polling if nobody else does. */
static bool wait_all(struct kverbs_run *run)
{
	unsigned long deadline = jiffies + 60 * HZ;

	if (run->cq->poll_ctx != IB_POLL_DIRECT)
		return wait_for_completion_timeout(&run->all_done, 60 * HZ);
	while (!completion_done(&run->all_done)) {
		if (time_after(jiffies, deadline))
			return false;
		ib_process_cq_direct(run->cq, 16);
		cond_resched();
	}
	return true;
}

/*
 * Every message completed exactly once on both sides, data intact, in the
 * order posted (RC); says what was wrong of the first bad message.
 */
static int check_run(struct kverbs_run *run)
{
	int i, bad = atomic_read(&run->errors);

	if (bad)
		pr_info("%d completions in error or posts refused\n", bad);
	for (i = 0; i < NMSG; i++) {
		int sends = atomic_read(&run->send[i].done);
		int recvs = atomic_read(&run->recv[i].done);
		bool same = !memcmp(run->buf + i * MSG_LEN,
				    run->buf + (NMSG + i) * MSG_LEN, MSG_LEN);

		if (!bad && (sends != 1 || recvs != 1 || !same))
			pr_info("message %d: %d send and %d receive completions, data %s\n",
				i, sends, recvs, same ? "intact" : "differs");
		bad += (sends != 1) + (recvs != 1) + !same;
	}
	return bad;
}

/* Drains both QPs; an SRQ drain that needs its 60 s timeout fails. */
static int drain(struct kverbs_run *run)
{
	unsigned long start = jiffies;

	ib_drain_qp(run->a);
	ib_drain_qp(run->b);
	return time_after(jiffies, start + 10 * HZ) ? -ETIMEDOUT : 0;
}

static int run_context(struct ib_device *dev, enum ib_poll_context ctx,
		       bool use_srq)
{
	struct ib_srq_init_attr srq_attr = {
		.attr = { .max_wr = NMSG, .max_sge = 1 },
	};
	struct kverbs_run *run;
	struct ib_port_attr port;
	size_t len = 2 * NMSG * MSG_LEN;
	int i, ret = -ENOMEM;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return -ENOMEM;
	run->dev = dev;
	spin_lock_init(&run->post_lock);
	init_completion(&run->all_done);
	for (i = 0; i < NMSG; i++) {
		run->send[i] = (struct msg){ .cqe.done = send_done, .run = run };
		run->recv[i] = (struct msg){ .cqe.done = recv_done, .run = run };
	}
	run->buf = kzalloc(len, GFP_KERNEL);
	if (!run->buf)
		goto free_run;
	run->dma = ib_dma_map_single(dev, run->buf, len, DMA_BIDIRECTIONAL);
	ret = -EIO;
	if (ib_dma_mapping_error(dev, run->dma))
		goto free_buf;
	run->pd = ib_alloc_pd(dev, 0);
	ret = PTR_ERR_OR_ZERO(run->pd);
	if (ret)
		goto unmap;
	run->cq = ib_alloc_cq(dev, run, 2 * NMSG + 4, 0, ctx);
	ret = PTR_ERR_OR_ZERO(run->cq);
	if (ret)
		goto free_pd;
	if (use_srq) {
		run->srq = ib_create_srq(run->pd, &srq_attr);
		ret = PTR_ERR_OR_ZERO(run->srq);
		if (ret)
			goto free_cq;
	}
	run->a = create_qp(run, NULL);
	ret = PTR_ERR_OR_ZERO(run->a);
	if (ret)
		goto free_srq;
	run->b = create_qp(run, run->srq);
	ret = PTR_ERR_OR_ZERO(run->b);
	if (ret)
		goto free_a;
	ret = ib_query_port(dev, 1, &port);
	if (!ret)
		ret = connect_qp(run->a, port.lid, run->b->qp_num);
	if (!ret)
		ret = connect_qp(run->b, port.lid, run->a->qp_num);
	if (!ret)
		ret = post_all(run, ctx);
	if (!ret && !wait_all(run))
		ret = -ETIMEDOUT;
	/* Draining flushes nothing of ours: everything completed already. */
	if (!ret)
		ret = drain(run);
	if (!ret && check_run(run))
		ret = -EBADMSG;
	ib_destroy_qp(run->b);
free_a:
	ib_destroy_qp(run->a);
free_srq:
	if (run->srq)
		ib_destroy_srq(run->srq);
free_cq:
	ib_free_cq(run->cq);
free_pd:
	ib_dealloc_pd(run->pd);
unmap:
	ib_dma_unmap_single(dev, run->dma, len, DMA_BIDIRECTIONAL);
free_buf:
	kfree(run->buf);
free_run:
	kfree(run);
	return ret;
}

/*
 * A refused post names in *bad_wr the first WR not posted: the head of a
 * list refused as a whole (receives in RESET, sends before RTS), or the
 * third WR of a list whose third has more SGEs than the QP allows.
 */
static int check_bad_wr(struct ib_device *dev)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_INIT, .port_num = 1 };
	struct ib_sge sge[2] = {};
	struct ib_recv_wr rwr[3] = {};
	struct ib_send_wr swr[2] = {};
	const struct ib_recv_wr *rbad = NULL;
	const struct ib_send_wr *sbad = NULL;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	int i, ret;

	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	cq = ib_alloc_cq(dev, NULL, 8, 0, IB_POLL_DIRECT);
	ret = PTR_ERR_OR_ZERO(cq);
	if (ret)
		goto free_pd;
	qp = new_rc_qp(pd, cq, NULL, 4, 0);
	ret = PTR_ERR_OR_ZERO(qp);
	if (ret)
		goto free_cq;
	for (i = 0; i < 3; i++) {
		rwr[i].next = i < 2 ? &rwr[i + 1] : NULL;
		rwr[i].sg_list = sge;
		rwr[i].num_sge = 1;
	}
	swr[0].next = &swr[1];
	for (i = 0; i < 2; i++) {
		swr[i].sg_list = sge;
		swr[i].num_sge = 1;
		swr[i].opcode = IB_WR_SEND;
	}
	ret = -EBADMSG;
	if (ib_post_recv(qp, rwr, &rbad) != -EINVAL || rbad != &rwr[0])
		goto destroy;
	if (ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			 IB_QP_PORT | IB_QP_ACCESS_FLAGS))
		goto destroy;
	if (ib_post_send(qp, swr, &sbad) != -EINVAL || sbad != &swr[0])
		goto destroy;
	rwr[2].num_sge = 2;
	if (ib_post_recv(qp, rwr, &rbad) != -EINVAL || rbad != &rwr[2])
		goto destroy;
	ret = 0;
destroy:
	ib_destroy_qp(qp);
free_cq:
	ib_free_cq(cq);
free_pd:
	ib_dealloc_pd(pd);
	return ret;
}

/* Posts one signaled SEND of @len bytes at DMA address @addr, id @id. */
static int post_send_at(struct ib_qp *qp, u64 addr, u32 len, u64 id)
{
	struct ib_sge sge = {
		.addr = addr, .length = len, .lkey = qp->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(qp, &wr, NULL);
}

/* Whether the next completion on @cq is @id's with @status. */
static bool next_wc_is(struct ib_cq *cq, u64 id, enum ib_wc_status status)
{
	struct ib_wc wc;

	return ib_poll_cq(cq, 1, &wc) == 1 && wc.wr_id == id &&
	       wc.status == status;
}

/* A connected RC pair a -> b, each on its own CQ (polled directly). */
struct pair {
	struct ib_pd *pd;
	struct ib_cq *cq, *bcq;
	struct ib_qp *a, *b;
};

static void pair_fini(struct pair *p)
{
	if (!IS_ERR_OR_NULL(p->b))
		ib_destroy_qp(p->b);
	if (!IS_ERR_OR_NULL(p->a))
		ib_destroy_qp(p->a);
	if (!IS_ERR_OR_NULL(p->bcq))
		ib_free_cq(p->bcq);
	if (!IS_ERR_OR_NULL(p->cq))
		ib_free_cq(p->cq);
	if (!IS_ERR_OR_NULL(p->pd))
		ib_dealloc_pd(p->pd);
}

/* Connects a new pair whose QPs may send @max_inline bytes inline. */
static int pair_init(struct pair *p, struct ib_device *dev, u32 max_inline)
{
	struct ib_port_attr port;
	int ret;

	memset(p, 0, sizeof(*p));
	p->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(p->pd))
		return PTR_ERR(p->pd);
	p->cq = ib_alloc_cq(dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->cq))
		return PTR_ERR(p->cq);
	p->bcq = ib_alloc_cq(dev, NULL, 16, 0, IB_POLL_DIRECT);
	if (IS_ERR(p->bcq))
		return PTR_ERR(p->bcq);
	p->a = new_rc_qp(p->pd, p->cq, NULL, 4, max_inline);
	if (IS_ERR(p->a))
		return PTR_ERR(p->a);
	p->b = new_rc_qp(p->pd, p->bcq, NULL, 4, max_inline);
	if (IS_ERR(p->b))
		return PTR_ERR(p->b);
	ret = ib_query_port(dev, 1, &port);
	if (!ret)
		ret = connect_qp(p->a, port.lid, p->b->qp_num);
	if (!ret)
		ret = connect_qp(p->b, port.lid, p->a->qp_num);
	return ret;
}

/* Posts one receive of @len bytes at DMA address @addr, id @id, on @qp. */
static int post_recv_at(struct ib_qp *qp, u64 addr, u32 len, u64 id)
{
	struct ib_sge sge = {
		.addr = addr, .length = len, .lkey = qp->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

/*
 * Any error completion of an RC QP leaves it in ERR, and later WRs flush.
 * The error here: a send whose SGE names memory outside the linear map (a
 * vmalloc buffer, which no DMA mapping would hand out) cannot be read.
 */
static int check_error_enters_err(struct ib_device *dev)
{
	struct ib_qp_attr attr;
	struct ib_qp_init_attr init;
	struct pair p;
	void *vbuf;
	u8 *buf;
	u64 dma;
	int ret = -ENOMEM;

	buf = kzalloc(64, GFP_KERNEL);
	vbuf = vzalloc(64);
	if (!buf || !vbuf)
		goto free_bufs;
	dma = ib_dma_map_single(dev, buf, 64, DMA_BIDIRECTIONAL);
	ret = -EIO;
	if (ib_dma_mapping_error(dev, dma))
		goto free_bufs;
	ret = pair_init(&p, dev, 0);
	if (!ret)
		ret = post_recv_at(p.b, dma, 64, 10);
	if (!ret)
		ret = post_send_at(p.a, (uintptr_t)vbuf, 64, 1);
	if (ret)
		goto fini;
	ret = -EBADMSG;
	if (!next_wc_is(p.cq, 1, IB_WC_LOC_PROT_ERR))
		goto fini;
	if (ib_query_qp(p.a, &attr, IB_QP_STATE, &init) ||
	    attr.qp_state != IB_QPS_ERR)
		goto fini;
	if (post_send_at(p.a, dma, 64, 2) || !next_wc_is(p.cq, 2, IB_WC_WR_FLUSH_ERR))
		goto fini;
	ret = 0;
fini:
	pair_fini(&p);
	ib_dma_unmap_single(dev, dma, 64, DMA_BIDIRECTIONAL);
free_bufs:
	vfree(vbuf);
	kfree(buf);
	return ret;
}

#define BIG	(1 << 20)

/* Polls @cq for one completion for up to 10 s (in process context). */
static bool wait_wc(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + 10 * HZ;

	while (ib_poll_cq(cq, 1, wc) != 1) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(100, 1000);
	}
	return true;
}

/*
 * One 1 MiB SEND from @p's a to b, posted with interrupts off: its data
 * must arrive intact. Returns 1 when its completion was there as soon as
 * the post returned, 0 when not, or an error.
 */
static int big_send(struct pair *p, u64 sdma, u64 ddma, u8 *src, u8 *dst)
{
	unsigned long flags;
	struct ib_wc swc, rwc;
	int ret, early;

	/* A virtual-DMA device's mapping is the address: no sync is due. */
	memset(dst, 0, BIG);
	ret = post_recv_at(p->b, ddma, BIG, 20);
	if (ret)
		return ret;
	local_irq_save(flags);
	ret = post_send_at(p->a, sdma, BIG, 21);
	early = ib_poll_cq(p->cq, 1, &swc);
	local_irq_restore(flags);
	if (ret || early < 0)
		return ret ?: early;
	if ((!early && !wait_wc(p->cq, &swc)) || !wait_wc(p->bcq, &rwc))
		return -EBADMSG;
	if (swc.wr_id != 21 || swc.status != IB_WC_SUCCESS ||
	    rwc.wr_id != 20 || rwc.status != IB_WC_SUCCESS ||
	    rwc.byte_len != BIG || memcmp(src, dst, BIG))
		return -EBADMSG;
	return early;
}

/*
 * A kernel consumer may post from atomic context: a 1 MiB SEND posted with
 * interrupts off must not be copied there. The post returns before its
 * completion exists; the QP's worker moves the data, intact. A completion
 * found at once is a copy in the post, unless the host stalled this CPU
 * while the worker copied on another: of three tries, one must find none.
 */
static int check_atomic_post_defers(struct ib_device *dev)
{
	struct pair p;
	u8 *src, *dst;
	u64 sdma, ddma;
	int ret = -ENOMEM, tries = 0;

	src = kmalloc(BIG, GFP_KERNEL);
	dst = kzalloc(BIG, GFP_KERNEL);
	if (!src || !dst)
		goto free_bufs;
	get_random_bytes(src, BIG);
	ret = -EIO;
	sdma = ib_dma_map_single(dev, src, BIG, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(dev, sdma))
		goto free_bufs;
	ddma = ib_dma_map_single(dev, dst, BIG, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, ddma))
		goto unmap_src;
	ret = pair_init(&p, dev, 0);
	if (ret)
		goto fini;
	do
		ret = big_send(&p, sdma, ddma, src, dst);
	while (ret == 1 && ++tries < 3);
	if (ret == 1)
		ret = -EBADMSG;
fini:
	pair_fini(&p);
	ib_dma_unmap_single(dev, ddma, BIG, DMA_FROM_DEVICE);
unmap_src:
	ib_dma_unmap_single(dev, sdma, BIG, DMA_TO_DEVICE);
free_bufs:
	kfree(dst);
	kfree(src);
	return ret;
}

#define INLINE	128

/*
 * A kernel QP's inline SEND takes its data from kernel memory that no DMA
 * mapping or key names (here the stack) when posted: overwritten at once,
 * it still arrives intact. More than the QP was granted is refused.
 */
static int check_inline_send(struct ib_device *dev)
{
	u8 src[INLINE + 1], want[INLINE];
	struct ib_sge sge = { .addr = (uintptr_t)src, .length = INLINE,
			      .lkey = 0xdeadbeef };
	struct ib_send_wr wr = {
		.wr_id = 31, .sg_list = &sge, .num_sge = 1, .opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
	};
	const struct ib_send_wr *bad = NULL;
	struct ib_qp_init_attr init;
	struct ib_qp_attr attr;
	struct ib_wc swc, rwc;
	struct pair p;
	u8 *dst;
	u64 ddma;
	int ret = -ENOMEM;

	dst = kzalloc(INLINE, GFP_KERNEL);
	if (!dst)
		return ret;
	ret = -EIO;
	ddma = ib_dma_map_single(dev, dst, INLINE, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, ddma))
		goto free_dst;
	get_random_bytes(src, sizeof(src));
	memcpy(want, src, INLINE);
	ret = pair_init(&p, dev, INLINE);
	if (!ret)
		ret = ib_query_qp(p.a, &attr, IB_QP_CAP, &init);
	if (!ret && init.cap.max_inline_data < INLINE)
		ret = -EBADMSG;
	if (!ret)
		ret = post_recv_at(p.b, ddma, INLINE, 30);
	if (!ret)
		ret = ib_post_send(p.a, &wr, NULL);
	if (ret)
		goto fini;
	memset(src, 0, sizeof(src));
	ret = -EBADMSG;
	if (!wait_wc(p.cq, &swc) || !wait_wc(p.bcq, &rwc))
		goto fini;
	if (swc.wr_id != 31 || swc.status != IB_WC_SUCCESS ||
	    rwc.wr_id != 30 || rwc.status != IB_WC_SUCCESS ||
	    rwc.byte_len != INLINE || memcmp(dst, want, INLINE))
		goto fini;
	sge.length = INLINE + 1;
	if (ib_post_send(p.a, &wr, &bad) != -EINVAL || bad != &wr)
		goto fini;
	ret = 0;
fini:
	pair_fini(&p);
	ib_dma_unmap_single(dev, ddma, INLINE, DMA_FROM_DEVICE);
free_dst:
	kfree(dst);
	return ret;
}

/*
 * Fast registration: b's MR over FR_LEN bytes of a kmalloc()ed buffer,
 * FR_OFF bytes into its first page, mapped with ib_map_mr_sg() and made
 * valid by a REG_MR of b; a reaches it with RDMA through its rkey.
 */
#define FR_PAGES	4
#define FR_OFF		100
#define FR_LEN		5000
#define FR_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

struct fr {
	struct pair p;
	struct ib_mr *mr;
	struct scatterlist sg;
	u8 *buf;		/* what b's MR maps, from FR_OFF */
	u8 *abuf;		/* a's memory, FR_LEN bytes, through its DMA lkey */
	u64 adma;
	bool sg_mapped;
};

static void fr_fini(struct fr *f, struct ib_device *dev)
{
	if (!IS_ERR_OR_NULL(f->mr))
		ib_dereg_mr(f->mr);
	pair_fini(&f->p);
	if (f->sg_mapped)
		ib_dma_unmap_sg(dev, &f->sg, 1, DMA_BIDIRECTIONAL);
	if (f->adma)
		ib_dma_unmap_single(dev, f->adma, FR_LEN, DMA_BIDIRECTIONAL);
	kfree(f->abuf);
	kfree(f->buf);
}

/* A connected pair whose b grants remote reads and writes, and b's MR. */
static int fr_init(struct fr *f, struct ib_device *dev)
{
	struct ib_qp_attr attr = {
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ,
	};
	int ret;

	memset(f, 0, sizeof(*f));
	f->buf = kzalloc(FR_PAGES * PAGE_SIZE, GFP_KERNEL);
	f->abuf = kmalloc(FR_LEN, GFP_KERNEL);
	if (!f->buf || !f->abuf)
		return -ENOMEM;
	get_random_bytes(f->abuf, FR_LEN);
	f->adma = ib_dma_map_single(dev, f->abuf, FR_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, f->adma)) {
		f->adma = 0;
		return -EIO;
	}
	sg_init_one(&f->sg, f->buf + FR_OFF, FR_LEN);
	if (ib_dma_map_sg(dev, &f->sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -EIO;
	f->sg_mapped = true;
	ret = pair_init(&f->p, dev, 0);
	if (ret)
		return ret;
	ret = ib_modify_qp(f->p.b, &attr, IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	f->mr = ib_alloc_mr(f->p.pd, IB_MR_TYPE_MEM_REG, FR_PAGES);
	if (IS_ERR(f->mr))
		return PTR_ERR(f->mr);
	ret = ib_map_mr_sg(f->mr, &f->sg, 1, NULL, PAGE_SIZE);
	return ret == 1 ? 0 : -EIO;
}

/* Posts a signaled REG_MR of @mr under @key with @access, id @id. */
static int post_reg(struct ib_qp *qp, struct ib_mr *mr, u32 key, int access,
		    u64 id)
{
	struct ib_reg_wr wr = {
		.wr = { .wr_id = id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr, .key = key, .access = access,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

/* Posts a signaled LOCAL_INV of @rkey, id @id. */
static int post_inv(struct ib_qp *qp, u32 rkey, u64 id)
{
	struct ib_send_wr wr = {
		.wr_id = id, .opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED, .ex.invalidate_rkey = rkey,
	};

	return ib_post_send(qp, &wr, NULL);
}

/* Posts a signaled RDMA @op of @len bytes between @laddr and @raddr. */
static int post_rdma(struct ib_qp *qp, enum ib_wr_opcode op, u64 laddr,
		     u32 len, u64 raddr, u32 rkey, u64 id)
{
	struct ib_sge sge = {
		.addr = laddr, .length = len, .lkey = qp->pd->local_dma_lkey,
	};
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = id, .opcode = op, .sg_list = &sge,
			.num_sge = 1, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr, .rkey = rkey,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

/*
 * Whether the next completion on @cq is @id's, with @status and, for a
 * success, @opcode.
 */
static bool got_wc(struct ib_cq *cq, u64 id, enum ib_wc_status status,
		   enum ib_wc_opcode opcode)
{
	struct ib_wc wc;

	if (!wait_wc(cq, &wc))
		return false;
	if (wc.wr_id != id || wc.status != status ||
	    (status == IB_WC_SUCCESS && wc.opcode != opcode)) {
		pr_info("# wr_id %llu status %d opcode %d, expected %llu %d %d\n",
			wc.wr_id, wc.status, wc.opcode, id, status, opcode);
		return false;
	}
	return true;
}

/* Registers b's MR under a new key: the consumer's byte incremented. */
static int fr_register(struct fr *f, u64 id)
{
	ib_update_fast_reg_key(f->mr, ib_inc_rkey(f->mr->rkey));
	if (post_reg(f->p.b, f->mr, f->mr->rkey, FR_ACCESS, id))
		return -EIO;
	return got_wc(f->p.bcq, id, IB_WC_SUCCESS, IB_WC_REG_MR) ? 0 : -EBADMSG;
}

/*
 * REG_MR makes the MR valid under its new key: a writes all of it and
 * reads part back across a page boundary through the rkey; LOCAL_INV
 * ends that, and a's next write is a remote access error.
 */
static int check_fastreg_rdma(struct ib_device *dev)
{
	struct fr f;
	u64 iova;
	int ret;

	ret = fr_init(&f, dev);
	if (!ret)
		ret = fr_register(&f, 1);
	if (ret)
		goto fini;
	ret = -EBADMSG;
	iova = f.mr->iova;
	if (iova != (uintptr_t)f.buf + FR_OFF || f.mr->length != FR_LEN)
		goto fini;
	if (post_rdma(f.p.a, IB_WR_RDMA_WRITE, f.adma, FR_LEN, iova,
		      f.mr->rkey, 2) ||
	    !got_wc(f.p.cq, 2, IB_WC_SUCCESS, IB_WC_RDMA_WRITE) ||
	    memcmp(f.buf + FR_OFF, f.abuf, FR_LEN))
		goto fini;
	memset(f.buf + FR_OFF + 4000, 0x77, 1000);
	if (post_rdma(f.p.a, IB_WR_RDMA_READ, f.adma, 1000, iova + 4000,
		      f.mr->rkey, 3) ||
	    !got_wc(f.p.cq, 3, IB_WC_SUCCESS, IB_WC_RDMA_READ) ||
	    memchr_inv(f.abuf, 0x77, 1000))
		goto fini;
	if (post_inv(f.p.b, f.mr->rkey, 4) ||
	    !got_wc(f.p.bcq, 4, IB_WC_SUCCESS, IB_WC_LOCAL_INV))
		goto fini;
	memset(f.buf, 0, FR_PAGES * PAGE_SIZE);
	if (post_rdma(f.p.a, IB_WR_RDMA_WRITE, f.adma, 8, iova, f.mr->rkey, 5) ||
	    !got_wc(f.p.cq, 5, IB_WC_REM_ACCESS_ERR, 0) ||
	    memchr_inv(f.buf, 0, FR_PAGES * PAGE_SIZE))
		goto fini;
	ret = 0;
fini:
	fr_fini(&f, dev);
	return ret;
}

/*
 * A SEND_WITH_INV invalidates the responder's MR it names: the receive
 * completes WITH_INVALIDATE and the key, and the MR is no longer valid.
 */
static int check_send_with_inv(struct ib_device *dev)
{
	struct ib_sge sge;
	struct ib_send_wr wr = {
		.wr_id = 11, .opcode = IB_WR_SEND_WITH_INV, .sg_list = &sge,
		.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
	};
	struct ib_wc wc;
	struct fr f;
	u32 rkey;
	int ret;

	ret = fr_init(&f, dev);
	if (!ret)
		ret = fr_register(&f, 10);
	if (!ret)
		ret = post_recv_at(f.p.b, (uintptr_t)f.buf + 3 * PAGE_SIZE, 64, 12);
	if (ret)
		goto fini;
	rkey = f.mr->rkey;
	sge = (struct ib_sge){ .addr = f.adma, .length = 64,
			       .lkey = f.p.pd->local_dma_lkey };
	wr.ex.invalidate_rkey = rkey;
	ret = -EBADMSG;
	if (ib_post_send(f.p.a, &wr, NULL) ||
	    !got_wc(f.p.cq, 11, IB_WC_SUCCESS, IB_WC_SEND) ||
	    !wait_wc(f.p.bcq, &wc))
		goto fini;
	if (wc.wr_id != 12 || wc.status != IB_WC_SUCCESS ||
	    wc.opcode != IB_WC_RECV || wc.byte_len != 64 ||
	    !(wc.wc_flags & IB_WC_WITH_INVALIDATE) ||
	    wc.ex.invalidate_rkey != rkey)
		goto fini;
	if (post_rdma(f.p.a, IB_WR_RDMA_WRITE, f.adma, 8, f.mr->iova, rkey, 13) ||
	    !got_wc(f.p.cq, 13, IB_WC_REM_ACCESS_ERR, 0))
		goto fini;
	ret = 0;
fini:
	fr_fini(&f, dev);
	return ret;
}

/*
 * Registered again under a new key (only the consumer's low byte
 * differs), the MR answers to that key only: the old rkey is a remote
 * access error.
 */
static int check_reg_key_update(struct ib_device *dev)
{
	struct fr f;
	u32 old;
	int ret;

	ret = fr_init(&f, dev);
	if (!ret)
		ret = fr_register(&f, 20);
	if (ret)
		goto fini;
	ret = -EBADMSG;
	old = f.mr->rkey;
	if (post_inv(f.p.b, old, 21) ||
	    !got_wc(f.p.bcq, 21, IB_WC_SUCCESS, IB_WC_LOCAL_INV) ||
	    fr_register(&f, 22) || f.mr->rkey == old ||
	    (f.mr->rkey ^ old) & ~0xffU)
		goto fini;
	if (post_rdma(f.p.a, IB_WR_RDMA_WRITE, f.adma, 8, f.mr->iova,
		      f.mr->rkey, 23) ||
	    !got_wc(f.p.cq, 23, IB_WC_SUCCESS, IB_WC_RDMA_WRITE) ||
	    post_rdma(f.p.a, IB_WR_RDMA_WRITE, f.adma, 8, f.mr->iova, old, 24) ||
	    !got_wc(f.p.cq, 24, IB_WC_REM_ACCESS_ERR, 0))
		goto fini;
	ret = 0;
fini:
	fr_fini(&f, dev);
	return ret;
}

enum fr_bad {
	FR_REG_VALID,		/* REG_MR of a valid MR */
	FR_INV_WRONG_KEY,	/* LOCAL_INV of a key that is not the MR's */
	FR_REG_OTHER_PD,	/* REG_MR of an MR of another PD */
	FR_SEND_INV_WRONG_KEY,	/* SEND_WITH_INV naming no MR of b */
	FR_LKEY_INVALID,	/* a local SGE through an invalidated MR */
	FR_BAD_COUNT
};

/* REG_MR on b of an MR of a PD of its own: refused at execution. */
static int fr_reg_other_pd(struct fr *f, struct ib_device *dev)
{
	struct ib_pd *other;
	struct ib_mr *mr;
	int ret;

	other = ib_alloc_pd(dev, 0);
	if (IS_ERR(other))
		return PTR_ERR(other);
	mr = ib_alloc_mr(other, IB_MR_TYPE_MEM_REG, FR_PAGES);
	ret = PTR_ERR_OR_ZERO(mr);
	if (ret)
		goto dealloc;
	ret = -EBADMSG;
	if (ib_map_mr_sg(mr, &f->sg, 1, NULL, PAGE_SIZE) == 1 &&
	    !post_reg(f->p.b, mr, mr->rkey, FR_ACCESS, 31) &&
	    got_wc(f->p.bcq, 31, IB_WC_LOC_QP_OP_ERR, 0))
		ret = 0;
	ib_dereg_mr(mr);
dealloc:
	ib_dealloc_pd(other);
	return ret;
}

/* One bad case on a fresh pair with b's MR valid: its WR fails. */
static int check_fastreg_bad_one(struct ib_device *dev, enum fr_bad bad)
{
	struct ib_sge sge;
	struct ib_send_wr send = {
		.wr_id = 33, .opcode = IB_WR_SEND_WITH_INV, .sg_list = &sge,
		.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
	};
	struct fr f;
	int ret;

	ret = fr_init(&f, dev);
	if (!ret)
		ret = fr_register(&f, 30);
	if (ret)
		goto fini;
	sge = (struct ib_sge){ .addr = f.adma, .length = 8,
			       .lkey = f.p.pd->local_dma_lkey };
	ret = -EBADMSG;
	switch (bad) {
	case FR_REG_VALID:
		if (post_reg(f.p.b, f.mr, f.mr->rkey, FR_ACCESS, 31) ||
		    !got_wc(f.p.bcq, 31, IB_WC_LOC_QP_OP_ERR, 0))
			goto fini;
		break;
	case FR_INV_WRONG_KEY:
		if (post_inv(f.p.b, f.mr->rkey + 1, 31) ||
		    !got_wc(f.p.bcq, 31, IB_WC_LOC_QP_OP_ERR, 0))
			goto fini;
		break;
	case FR_REG_OTHER_PD:
		ret = fr_reg_other_pd(&f, dev);
		if (ret)
			goto fini;
		break;
	case FR_SEND_INV_WRONG_KEY:
		send.ex.invalidate_rkey = f.mr->rkey ^ 0x100;
		if (post_recv_at(f.p.b, f.adma + 64, 64, 32) ||
		    ib_post_send(f.p.a, &send, NULL) ||
		    !got_wc(f.p.cq, 33, IB_WC_REM_OP_ERR, 0) ||
		    !got_wc(f.p.bcq, 32, IB_WC_REM_INV_REQ_ERR, 0))
			goto fini;
		break;
	case FR_LKEY_INVALID:
		if (post_inv(f.p.b, f.mr->rkey, 31) ||
		    !got_wc(f.p.bcq, 31, IB_WC_SUCCESS, IB_WC_LOCAL_INV))
			goto fini;
		sge = (struct ib_sge){ .addr = f.mr->iova, .length = 8,
				       .lkey = f.mr->lkey };
		send.opcode = IB_WR_SEND;
		if (ib_post_send(f.p.b, &send, NULL) ||
		    !got_wc(f.p.bcq, 33, IB_WC_LOC_PROT_ERR, 0))
			goto fini;
		break;
	default:
		goto fini;
	}
	ret = 0;
fini:
	fr_fini(&f, dev);
	return ret;
}

/*
 * The bad cases, and the limits: more pages than the device maps, and a
 * mapping longer than the MR was allocated for (only what fits is mapped).
 */
static int check_fastreg_bad(struct ib_device *dev)
{
	struct scatterlist sg[2];
	struct ib_mr *mr;
	struct ib_pd *pd;
	u8 *buf;
	int i, ret;

	for (i = 0; i < FR_BAD_COUNT; i++) {
		ret = check_fastreg_bad_one(dev, i);
		if (ret) {
			pr_info("# fast registration bad case %d: %d\n", i, ret);
			return ret;
		}
	}
	if (!(dev->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS))
		return -EBADMSG;
	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	ret = -EBADMSG;
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG,
			 dev->attrs.max_fast_reg_page_list_len + 1);
	if (!IS_ERR(mr)) {
		ib_dereg_mr(mr);
		goto dealloc;
	}
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	ret = PTR_ERR_OR_ZERO(mr);
	if (ret)
		goto dealloc;
	ret = -ENOMEM;
	buf = kzalloc(2 * PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		goto dereg;
	sg_init_table(sg, 2);
	sg_set_buf(&sg[0], buf, PAGE_SIZE);
	sg_set_buf(&sg[1], buf + PAGE_SIZE, PAGE_SIZE);
	ret = -EIO;
	if (ib_dma_map_sg(dev, sg, 2, DMA_BIDIRECTIONAL) == 2) {
		ret = ib_map_mr_sg(mr, sg, 2, NULL, PAGE_SIZE) == 1 ? 0 : -EBADMSG;
		ib_dma_unmap_sg(dev, sg, 2, DMA_BIDIRECTIONAL);
	}
	kfree(buf);
dereg:
	ib_dereg_mr(mr);
dealloc:
	ib_dealloc_pd(pd);
	return ret;
}

/* Prints TAP line @n for a check that returned @ret, and counts it. */
static void __init report(int n, int ret, const char *what)
{
	total_tests++;
	if (ret)
		failed_tests++;
	pr_info("%sok %d - kernel consumer%s (%d)\n", ret ? "not " : "", n, what, ret);
}

#define MSGS	__stringify(NMSG) " messages"

static void __init selftest(void)
{
	static const struct {
		enum ib_poll_context ctx;
		bool srq;
		const char *name;
	} runs[] = {
		{ IB_POLL_DIRECT, false, ", poll context direct: " MSGS },
		{ IB_POLL_SOFTIRQ, false, ", poll context softirq: " MSGS },
		{ IB_POLL_WORKQUEUE, false, ", poll context workqueue: " MSGS },
		{ IB_POLL_WORKQUEUE, true,
		  ", poll context workqueue, receives from an SRQ: " MSGS },
	};
	struct ib_device *dev;
	int i;

	dev = ib_find_begin(DEVICE_NAME);
	if (!dev) {
		report(1, -ENODEV, ": " DEVICE_NAME " found");
		ib_find_end();
		return;
	}
	for (i = 0; i < ARRAY_SIZE(runs); i++)
		report(i + 1, run_context(dev, runs[i].ctx, runs[i].srq), runs[i].name);
	report(++i, check_bad_wr(dev), ": bad_wr names the first WR not posted");
	report(++i, check_error_enters_err(dev),
	       ": an error completion puts the QP in ERR");
	report(++i, check_atomic_post_defers(dev),
	       ": a 1 MiB post with IRQs off is left to the worker");
	report(++i, check_inline_send(dev),
	       ": an inline SEND is taken from its buffer when posted");
	report(++i, check_fastreg_rdma(dev),
	       ": REG_MR, RDMA through the rkey, LOCAL_INV, then access fails");
	report(++i, check_send_with_inv(dev),
	       ": SEND_WITH_INV invalidates the responder's MR");
	report(++i, check_reg_key_update(dev),
	       ": a REG_MR under a new key retires the old one");
	report(++i, check_fastreg_bad(dev),
	       ": fast registration's bad cases complete in error");
	ib_find_end();
}

KSTM_MODULE_LOADERS(rsoft_kverbs);
MODULE_DESCRIPTION("rsoft kernel-consumer selftest");
MODULE_LICENSE("GPL");
