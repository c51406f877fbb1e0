// SPDX-License-Identifier: GPL-2.0
/*
 * One RDMA WRITE of the port's max_msg_sz (2 GiB) while another process
 * keeps a ping-pong going on the same device: the device must not stop for
 * the one big request, and it must move every byte.
 *
 * The 2 GiB need 64 MiB of memory: the source is 32 SGEs naming one
 * 64 MiB buffer, the destination a 2 GiB range made of 32 mappings of one
 * 64 MiB memfd, so that every copy of the source lands on the same pages.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define PIECE		(64UL << 20)
#define PIECES		32
#define PING		64
/* Round trips the ping-pong must make while the write runs. */
#define MIN_PINGS	20

/* The ping-pong of a child process: messages a -> b, counted in @count. */
static void pingpong(unsigned long *count)
{
	struct loopback lb;
	struct ibv_wc wc;

	if (loopback_init(&lb, 4, 4, 4096))
		_exit(2);
	for (;;) {
		struct ibv_sge rsge = { (uintptr_t)lb.buf + 2048, PING, lb.mr->lkey };
		struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 };
		struct ibv_sge sge = { (uintptr_t)lb.buf, PING, lb.mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		}, *bad;
		struct ibv_recv_wr *rbad;
		int n;

		if (ibv_post_recv(lb.b, &rwr, &rbad) || ibv_post_send(lb.a, &wr, &bad))
			_exit(3);
		while (!(n = ibv_poll_cq(lb.rcq, 1, &wc)))
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS)
			_exit(4);
		__atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
	}
}

static unsigned long pings(unsigned long *count)
{
	return __atomic_load_n(count, __ATOMIC_RELAXED);
}

FIXTURE(bigwrite) {
};

FIXTURE_SETUP(bigwrite)
{
}

FIXTURE_TEARDOWN(bigwrite)
{
}

/* Pinning and unpinning 2 GiB of pages takes a while in a debug kernel. */
TEST_F_TIMEOUT(bigwrite, max_msg_write_while_pingpong_runs, 600)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = PIECES, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_sge sges[PIECES];
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = sges, .num_sge = PIECES,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	unsigned long *count;
	struct ibv_port_attr port;
	struct ibv_context *ctx;
	struct ibv_mr *smr, *dmr;
	struct ibv_qp *qa, *qb;
	unsigned long before, during;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	char *src, *dst;
	double t0, t1;
	pid_t child;
	int fd, n;

	ctx = rsoft_open(RSOFT_DEV);
	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &port));
	ASSERT_EQ(PIECE * PIECES, port.max_msg_sz);

	/* The destination: 32 views of one memfd, back to back. */
	fd = memfd_create("rsoft-bigwrite", 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, PIECE));
	dst = mmap(NULL, PIECE * PIECES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, dst);
	for (int i = 0; i < PIECES; i++) {
		char *at = dst + i * PIECE;

		ASSERT_EQ(at, mmap(at, PIECE, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_FIXED, fd, 0));
	}
	memset(dst, 0, PIECE);
	src = mmap(NULL, PIECE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	for (size_t i = 0; i < PIECE; i += 8)
		*(uint64_t *)(src + i) = i * 0x9e3779b97f4a7c15ULL;

	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	smr = ibv_reg_mr(pd, src, PIECE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, smr);
	dmr = ibv_reg_mr(pd, dst, PIECE * PIECES,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, dmr) TH_LOG("reg_mr of 2 GiB: %s", strerror(errno));
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	init.send_cq = cq;
	init.recv_cq = cq;
	qa = ibv_create_qp(pd, &init);
	qb = ibv_create_qp(pd, &init);
	ASSERT_NE(NULL, qa);
	ASSERT_NE(NULL, qb);
	ASSERT_EQ(0, rsoft_connect_access(qa, port.lid, qb->qp_num, 7, 0));
	ASSERT_EQ(0, rsoft_connect_access(qb, port.lid, qa->qp_num, 7,
					  IBV_ACCESS_REMOTE_WRITE));

	count = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, count);
	*count = 0;
	child = fork();
	ASSERT_LE(0, child);
	if (!child)
		pingpong(count);
	/* Let the ping-pong get going. */
	t0 = mono_now();
	while (pings(count) < MIN_PINGS && mono_now() - t0 < 30)
		usleep(1000);
	ASSERT_LE(MIN_PINGS, pings(count));

	for (int i = 0; i < PIECES; i++)
		sges[i] = (struct ibv_sge){ (uintptr_t)src, PIECE, smr->lkey };
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = dmr->rkey;
	before = pings(count);
	t0 = mono_now();
	ASSERT_EQ(0, ibv_post_send(qa, &wr, &bad));
	while (!(n = ibv_poll_cq(cq, 1, &wc)) && mono_now() - t0 < 600)
		sched_yield();
	t1 = mono_now();
	during = pings(count) - before;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ASSERT_EQ(1, n);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(PIECE * PIECES, wc.byte_len);
	EXPECT_EQ(0, memcmp(dst, src, PIECE));
	TH_LOG("2 GiB in %.1f s; %lu ping-pong round trips meanwhile",
	       t1 - t0, during);
	EXPECT_LE(MIN_PINGS, during);

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(smr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	munmap(dst, PIECE * PIECES);
	munmap(src, PIECE);
	close(fd);
}

TEST_HARNESS_MAIN
