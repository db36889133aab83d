/* What the parts of the RDMA model share: the events it keeps, the queue
 * pairs and connection rows of the replay, the model's state, and the
 * functions one part calls in another.  Private to model_rdma.c and its
 * rdma_*.c parts; everything else reads model_rdma.h.
 *
 *   model_rdma.c       the model interface: keeps the events, runs the
 *                      stages at finish, builds the result
 *   rdma_names.c       status, error class, opcode and size bucket names
 *   rdma_replay.c      the time-ordered replay: queue pairs, connection
 *                      rows, work requests paired with their completions
 *   rdma_conn_stats.c  what a connection row counts: ops, bytes, latency
 *                      by opcode and size, errors by status and class
 *   rdma_join.c        joining the two ends of a connection across files
 *   rdma_files.c       endpoint labels, per-file rows, port counters */
#ifndef FLIGHTREC_RDMA_PRIVATE_H
#define FLIGHTREC_RDMA_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include "hmap.h"
#include "lat_hist.h"
#include "model_rdma.h"

struct trace_set;

/* 64 buckets per power of two: what model_rdma.h promises (within 0.8%).
 * Finer would move every percentile printed so far. */
#define RDMA_LATENCY_BITS 6u

enum { EV_CTRL = 0, EV_POST = 1, EV_CQE = 2 }; /* also the order at equal times */

/* One rdma event, as much of it as the replay needs. */
struct rev {
	uint64_t ts_ns;
	uint64_t seq;      /* arrival order: keeps a chain's WRs in order */
	uint64_t wr_id;
	uint64_t bytes;    /* post: SGE bytes; completion: byte_len */
	uint32_t file, pid;
	uint32_t qp_num;
	uint32_t opcode;   /* post: ibv_wr_opcode; completion: ibv_wc_opcode; ctrl: func */
	uint32_t status;   /* completion: ibv_wc_status; ctrl: index in ctrls */
	uint32_t src_qp;   /* completion */
	uint16_t flags;    /* post: enum fr_rdma_post_flags */
	uint8_t kind;
};

/* The control calls the replay needs (create, modify, destroy qp). */
struct rctrl {
	int64_t result;
	uint32_t qp_state, dest_qp_num, path_mtu;
	uint16_t dlid;
	uint8_t gid[16];
};

/* A posted WR waiting for its completion. */
struct pend {
	uint64_t post_ns, wr_id, bytes;
	uint32_t opcode;
	uint16_t flags;
};

/* A FIFO: v[head .. head + len). */
struct wrq {
	struct pend *v;
	size_t head, len, cap;
};

/* Bounds: a queue never holds more (the oldest is dropped), and a completion
 * looks this far for its wr_id. */
#define RDMA_MAX_PENDING (1u << 20)
#define RDMA_MATCH_WINDOW 4096u
#define NO_CONN SIZE_MAX

/* One life of a queue pair: (file, pid, qp_num) until create or destroy. */
struct qp {
	uint32_t file, pid, qp_num;
	size_t conn;       /* current row in acc, NO_CONN before the first event */
	struct wrq sq, rq;
};

/* A connection row being counted, with the histograms behind its
 * latencies. */
struct conn_acc {
	struct rdma_conn c;
	struct lat_hist lat;
	struct lat_hist *row_lat; /* parallel to c.rows */
	size_t cap_rows;
	uint64_t order;       /* creation order, for a stable sort */
};

struct file_count {
	uint64_t posts, completions, ctrl_calls;
};

struct model_rdma {
	struct model_opts opts;
	struct rev *evs;
	size_t n_evs, cap_evs;
	struct rctrl *ctrls;
	size_t n_ctrls, cap_ctrls;
	struct file_count *per_file;
	size_t n_per_file;

	/* replay */
	struct qp *qps;
	size_t n_qps, cap_qps;
	struct hmap qp_by_key;  /* (file << 32 | pid, qp_num) -> index in qps */
	struct conn_acc *acc;
	size_t n_acc, cap_acc;

	struct rdma_result result;
};

/* Grows *v (*cap elements of elem bytes) to hold need; 0 or -1. */
int rdma_grow(void **v, size_t *cap, size_t need, size_t elem);

/* rdma_replay.c: replays the kept events in time order into m->acc;
 * rdma_replay_free frees what only the replay needs (queue pairs and their
 * queues, events, control calls). */
int rdma_replay(struct model_rdma *m);
void rdma_replay_free(struct model_rdma *m);

/* rdma_conn_stats.c */
struct conn_acc *rdma_conn_new(struct model_rdma *m, struct qp *q);
void rdma_conn_note_time(struct rdma_conn *c, uint64_t ts);
/* An error completion (flush included) with that status. */
void rdma_conn_count_status(struct rdma_conn *c, uint32_t status);
/* One WR completed successfully at done_ns: its op, bytes and latency. */
int rdma_conn_retire_ok(struct conn_acc *a, const struct pend *p, int recv, uint32_t opcode,
			uint64_t bytes, uint64_t done_ns);
/* The latencies of the row and its opcode rows, from their histograms;
 * the opcode rows sorted by receive, opcode, size bucket. */
void rdma_conn_summarize(struct conn_acc *a);
void rdma_conn_free(struct conn_acc *a);

/* rdma_join.c: sets each row's remote end, counts ambiguous ones. */
int rdma_join(struct model_rdma *m);

/* rdma_files.c */
void rdma_label(struct trace_set *ts, struct rdma_endpoint *ep);
int rdma_files_and_counters(struct model_rdma *m, struct trace_set *ts);

#endif
