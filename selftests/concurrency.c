// SPDX-License-Identifier: GPL-2.0
/*
 * rsoft0 under concurrent use: RC QP pairs in several processes at once
 * moving verified data, and MR deregistration and QP destruction racing
 * with transfers that use them. Whatever the engine, nothing may be lost
 * (every posted WR completes exactly once), nothing may be written after
 * its MR is gone, and no WR may succeed after its QP saw an error.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define NPROC		4
#define ROUNDS		50
#define CHUNK		(64 * 1024)
#define SLOTS		8
#define REMOTE		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)

/* Waits up to 10 s for one completion on @cq. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	time_t end = time(NULL) + 10;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, wc)) && time(NULL) < end)
		sched_yield();
	return n == 1 ? 0 : -1;
}

static void fill(char *p, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)(seed * 131 + i * 7 + (i >> 8));
}

/* One signaled RDMA WRITE or READ between a's buffer and @raddr. */
static int rdma(struct loopback *lb, enum ibv_wr_opcode op, size_t off,
		uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)lb->buf + off, len, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	return ibv_post_send(lb->a, &wr, &bad);
}

/* Makes b's memory @t (@len bytes) writable and readable by a. */
static struct ibv_mr *open_target(struct loopback *lb, char *t, size_t len)
{
	struct ibv_qp_attr attr = { .qp_access_flags = REMOTE };

	if (ibv_modify_qp(lb->b, &attr, IBV_QP_ACCESS_FLAGS))
		return NULL;
	return ibv_reg_mr(lb->pd, t, len, REMOTE);
}

/*
 * One process's share: WRITE a chunk into b's memory, READ it back into
 * another part of a's buffer, SEND it into a receive; each checked.
 * Returns the number of failed checks.
 */
static int verified_traffic(unsigned int seed)
{
	size_t tlen = SLOTS * CHUNK;
	char *target = aligned_alloc(4096, tlen);
	struct loopback lb;
	struct ibv_mr *tmr;
	struct ibv_wc wc;
	int bad = 0;

	if (!target || loopback_init(&lb, 8, 8, 4 * CHUNK))
		return 1;
	tmr = open_target(&lb, target, tlen);
	if (!tmr)
		return 1;
	for (unsigned int r = 0; r < ROUNDS && !bad; r++) {
		size_t slot = (r % SLOTS) * CHUNK;
		uint64_t raddr = (uintptr_t)target + slot;

		fill(lb.buf, CHUNK, seed * ROUNDS + r);
		bad += rdma(&lb, IBV_WR_RDMA_WRITE, 0, CHUNK, raddr, tmr->rkey, r) ||
		       wait_wc(lb.scq, &wc) || wc.status != IBV_WC_SUCCESS ||
		       memcmp(target + slot, lb.buf, CHUNK);
		bad += rdma(&lb, IBV_WR_RDMA_READ, CHUNK, CHUNK, raddr, tmr->rkey, r) ||
		       wait_wc(lb.scq, &wc) || wc.status != IBV_WC_SUCCESS ||
		       memcmp(lb.buf + CHUNK, lb.buf, CHUNK);
		bad += post_recv(&lb, lb.b, r, 2 * CHUNK, CHUNK) ||
		       post_send(&lb, lb.a, r, 0, CHUNK) ||
		       wait_wc(lb.scq, &wc) || wc.status != IBV_WC_SUCCESS ||
		       wait_wc(lb.rcq, &wc) || wc.status != IBV_WC_SUCCESS ||
		       wc.byte_len != CHUNK ||
		       memcmp(lb.buf + 2 * CHUNK, lb.buf, CHUNK);
	}
	ibv_dereg_mr(tmr);
	loopback_fini(&lb);
	free(target);
	return bad;
}

/* NPROC processes, each with its own RC pair on the one device. */
TEST(processes_move_verified_data)
{
	pid_t pid[NPROC];
	int status;

	for (int i = 0; i < NPROC; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i])
			_exit(verified_traffic(i + 1) ? 1 : 0);
	}
	for (int i = 0; i < NPROC; i++) {
		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("process %d: status %#x", i, status);
	}
}

/* What a posting thread saw. */
struct stream {
	struct loopback *lb;
	struct ibv_mr *tmr;	/* RDMA WRITE target, or NULL: SENDs */
	int posted, completed, successes, errors, flushes, out_of_order;
	int success_after_error, refused;
};

/* Receives ready for the SEND stream: it must never wait on RNR. */
#define RECEIVES	1024

/* Waits until @s has moved a few WRs, so that it is in full flow. */
static int flowing(struct stream *s)
{
	time_t end = time(NULL) + 10;

	while (__atomic_load_n(&s->successes, __ATOMIC_RELAXED) < 5)
		if (time(NULL) > end)
			return 0;
	return 1;
}

/*
 * Posts one signaled WR at a time and waits for it, until the QP has
 * failed and flushed a few more; counts what came back.
 */
static void *stream_run(void *arg)
{
	struct stream *s = arg;
	struct loopback *lb = s->lb;
	struct ibv_wc wc;

	for (int i = 0; i < 20000 && s->flushes < 3; i++) {
		int ret = s->tmr ?
			rdma(lb, IBV_WR_RDMA_WRITE, 0, CHUNK,
			     (uintptr_t)s->tmr->addr, s->tmr->rkey, i) :
			post_send(lb, lb->a, i, 0, 64);

		if (ret) {
			s->refused++;
			break;
		}
		s->posted++;
		if (wait_wc(lb->scq, &wc))
			break;
		s->completed++;
		s->out_of_order += wc.wr_id != (uint64_t)i;
		if (wc.status == IBV_WC_SUCCESS) {
			__atomic_add_fetch(&s->successes, 1, __ATOMIC_RELAXED);
			s->success_after_error += s->errors + s->flushes > 0;
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			s->flushes++;
		} else {
			s->errors++;
		}
	}
	return NULL;
}

static void expect_stream(struct __test_metadata *_metadata, struct stream *s)
{
	EXPECT_EQ(0, s->refused);
	EXPECT_EQ(s->posted, s->completed);
	EXPECT_EQ(0, s->out_of_order);
	EXPECT_EQ(0, s->success_after_error);
	EXPECT_EQ(1, s->errors);
	EXPECT_EQ(3, s->flushes);
	TH_LOG("%d posted, %d ok, %d error, %d flushed", s->posted,
	       s->successes, s->errors, s->flushes);
}

/*
 * An MR deregistered while RDMA WRITEs stream into it, and a QP destroyed
 * while SENDs stream towards it: each stream ends in one error completion
 * and flushes, and the deregistered memory is never written again.
 */
TEST(dereg_and_destroy_race_with_transfers)
{
	char *target = aligned_alloc(4096, CHUNK), *copy = malloc(CHUNK);
	struct loopback w, s;
	struct stream ws = { .lb = &w }, ss = { .lb = &s };
	pthread_t tw, ts;

	ASSERT_NE(NULL, target);
	ASSERT_NE(NULL, copy);
	ASSERT_EQ(0, loopback_init(&w, 8, 8, CHUNK));
	ASSERT_EQ(0, loopback_init(&s, 8, RECEIVES, 64 * RECEIVES));
	ws.tmr = open_target(&w, target, CHUNK);
	ASSERT_NE(NULL, ws.tmr);
	for (int i = 0; i < RECEIVES; i++)
		ASSERT_EQ(0, post_recv(&s, s.b, i, 64 * i, 64));

	ASSERT_EQ(0, pthread_create(&tw, NULL, stream_run, &ws));
	ASSERT_EQ(0, pthread_create(&ts, NULL, stream_run, &ss));
	ASSERT_TRUE(flowing(&ws));
	ASSERT_EQ(0, ibv_dereg_mr(ws.tmr));
	fill(target, CHUNK, 99);
	memcpy(copy, target, CHUNK);
	ASSERT_TRUE(flowing(&ss));
	ASSERT_EQ(0, ibv_destroy_qp(s.b));
	s.b = NULL;
	ASSERT_EQ(0, pthread_join(tw, NULL));
	ASSERT_EQ(0, pthread_join(ts, NULL));

	expect_stream(_metadata, &ws);
	expect_stream(_metadata, &ss);
	EXPECT_EQ(0, memcmp(copy, target, CHUNK));
	loopback_fini(&s);
	loopback_fini(&w);
	free(copy);
	free(target);
}

TEST_HARNESS_MAIN
