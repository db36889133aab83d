/* fakerdma.h: non-standard knobs of flightrec's fake RDMA stack.
 *
 * For: samples and tests that run on the stand-in libibverbs in this
 * directory (samples/verbs/), to make one QP slow or make it fail
 * deterministically.  Not for: real RDMA hardware; a program linked against
 * the real rdma-core libibverbs has no such symbols.
 *
 * The stand-in exports these from libibverbs.so.1 under version node
 * FAKERDMA_1.0.  Both return 0 or an errno value (EINVAL: not a fake QP). */
#ifndef FLIGHTREC_FAKERDMA_H
#define FLIGHTREC_FAKERDMA_H

struct ibv_qp;

/* Completions of work requests posted on qp from now on become visible to
 * ibv_poll_cq latency_us microseconds after the ibv_post_send /
 * ibv_post_recv call entered (receive completions: after the sender's post
 * plus the sender's latency). */
int fakerdma_set_qp_latency(struct ibv_qp *qp, unsigned latency_us);

/* Every error_every-th signaled send work request executed on qp (counted
 * from this call on, across QP resets; flushed requests not counted) completes with
 * IBV_WC_RETRY_EXC_ERR, moves no data, and moves the QP to IBV_QPS_ERR:
 * later and outstanding work requests complete with IBV_WC_WR_FLUSH_ERR
 * until the QP is taken through RESET/INIT/RTR/RTS again.  0 disables. */
int fakerdma_set_qp_error_every(struct ibv_qp *qp, unsigned error_every);

#endif
