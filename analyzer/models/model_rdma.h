/* The RDMA verbs model: connections (one row per local queue pair view,
 * joined to the other end across files), work requests paired with their
 * completions, post->completion latency, error completions by status and
 * class, port counters and empty polls.  rdma_replay.c explains the
 * pairing rules, rdma_join.c the join.  Not for output (cmd_rdma.c lays the
 * result out). */
#ifndef FLIGHTREC_MODEL_RDMA_H
#define FLIGHTREC_MODEL_RDMA_H

#include <stddef.h>
#include <stdint.h>
#include "model.h"

extern const struct model_ops model_rdma_ops;

/* enum ibv_wc_status values the model names (rdma-core verbs.h). */
enum {
	RDMA_WC_SUCCESS = 0,
	RDMA_WC_WR_FLUSH_ERR = 5,
	RDMA_WC_RETRY_EXC_ERR = 12,
	RDMA_WC_RNR_RETRY_EXC_ERR = 13,
	RDMA_WC_STATUSES = 24, /* statuses 0..23 are counted one by one */
};
#define RDMA_WC_RECV 128u  /* IBV_WC_RECV: opcode & 128 marks a receive */

/* "IBV_WC_RETRY_EXC_ERR" ...; NULL for a status the table lacks. */
const char *rdma_wc_status_name(uint32_t status);
/* "RDMA_WRITE", "SEND", ... (enum ibv_wr_opcode without IBV_WR_) for send
 * work requests; "RECV", "RECV_RDMA_WITH_IMM" (enum ibv_wc_opcode) for
 * receives.  Never NULL ("OPCODE_n" in buf for unknown ones). */
const char *rdma_opcode_name(int recv, uint32_t opcode, char *buf, size_t len);

/* Error classes of the non-flush error statuses. */
enum rdma_err_class {
	RDMA_ERR_RETRY_EXHAUSTED,     /* IBV_WC_RETRY_EXC_ERR: no ACK after retry_cnt tries */
	RDMA_ERR_RNR_RETRY_EXHAUSTED, /* IBV_WC_RNR_RETRY_EXC_ERR: receiver not ready */
	RDMA_ERR_REMOTE_NAK,          /* REM_ACCESS, REM_INV_REQ, REM_OP, REM_INV_RD_REQ, REM_ABORT */
	RDMA_ERR_LOCAL,               /* LOC_LEN, LOC_QP_OP, LOC_EEC_OP, LOC_PROT, MW_BIND,
					 BAD_RESP, LOC_ACCESS, LOC_RDD_VIOL */
	RDMA_ERR_OTHER,               /* fatal, response timeout, general, tag matching, unknown */
	RDMA_ERR_CLASSES
};
/* "retry_exhausted", "rnr_retry_exhausted", "remote_nak", "local", "other" */
const char *rdma_err_class_name(enum rdma_err_class c);
/* The class of a status other than success and flush. */
enum rdma_err_class rdma_err_class_of(uint32_t status);

enum rdma_size_bucket { RDMA_SIZE_LT_4K, RDMA_SIZE_4K_64K, RDMA_SIZE_64K_1M, RDMA_SIZE_GE_1M,
			RDMA_SIZE_BUCKETS };
/* "<4K", "4K-64K", "64K-1M", ">=1M" */
const char *rdma_size_bucket_name(enum rdma_size_bucket b);
enum rdma_size_bucket rdma_size_bucket_of(uint64_t bytes);

/* Post->completion latency of the successful work requests of a group.
 * Percentiles are nearest-rank from a log-linear histogram (lat_hist.h at
 * 6 bits: exact below 64 ns, then 64 sub-buckets per power of two,
 * reported at the bucket's middle and clamped to [min, max]): within 0.8%
 * of the exact value.  max and min are exact. */
struct rdma_latency {
	uint64_t count;
	uint64_t p50_ns, p99_ns, max_ns, min_ns;
	uint64_t sum_ns;
};

/* One (opcode, size bucket) of a connection. */
struct rdma_op_row {
	int recv;                    /* a receive: opcode is an ibv_wc_opcode */
	uint32_t opcode;             /* else an ibv_wr_opcode */
	enum rdma_size_bucket bucket;
	uint64_t ops, bytes;
	struct rdma_latency latency;
};

/* One end of a connection: the process that owns a queue pair. */
struct rdma_endpoint {
	uint32_t file;               /* index in the trace set */
	const char *host;            /* the file's host; owned by the trace set */
	uint32_t pid;
	int64_t rank;                /* -1: unknown */
	char comm[17];
};

/* One local queue pair's view of a connection.  Two QPs that talk to each
 * other are two rows (each with the other as its remote end), also when
 * both live in one process. */
struct rdma_conn {
	struct rdma_endpoint local;
	uint32_t qp_num;
	int remote_qp_known;
	uint32_t remote_qp;          /* dest_qp_num at RTR, else a completion's src_qp */
	int has_rtr;                 /* modify_qp to RTR seen: remote_gid, dlid, path_mtu valid */
	uint8_t remote_gid[16];
	uint16_t dlid;
	uint32_t path_mtu;           /* enum ibv_mtu */
	uint64_t rtr_ns;
	int joined;                  /* the remote QP's own row was found */
	size_t remote_conn;          /* its index in rdma_result.conns, when joined */
	struct rdma_endpoint remote; /* valid when joined */

	uint64_t first_ns, last_ns;  /* active span: first retired post .. last completion */
	uint64_t ops, bytes;         /* work requests completed successfully, their bytes */
	uint64_t send_ops, send_bytes, recv_ops, recv_bytes;
	uint64_t completions;        /* completions returned by poll_cq for this QP */
	struct rdma_latency latency; /* successful send-queue work requests */
	struct rdma_op_row *rows;    /* by receive, opcode, size bucket */
	size_t n_rows;
	uint64_t errors;             /* error completions, flushes excluded */
	uint64_t by_status[RDMA_WC_STATUSES]; /* error completions per status (flush included) */
	uint64_t other_status;       /* statuses >= RDMA_WC_STATUSES */
	uint64_t by_class[RDMA_ERR_CLASSES];
	uint64_t flush_errors;       /* IBV_WC_WR_FLUSH_ERR completions: consequences, not losses */
	uint64_t unmatched;          /* completions whose work request is not in the trace */
	uint64_t missed;             /* work requests retired without the completion they
					should have had (an event was lost) */
	uint64_t truncated;          /* completions that closed a chain the probe did not walk whole */
	uint64_t failed_posts;       /* work requests the post call rejected */
	uint64_t dropped;            /* pending at a RESET/destroy, or over the queue bound */
	uint64_t outstanding;        /* still pending at the end of the recording */
};

/* One port counter of one file, over the recording. */
struct rdma_counter_row {
	uint32_t file;
	const char *host;
	char name[41];               /* "device/port/counter" */
	uint64_t total, max_delta, samples;
	double max_per_s;
};

/* Per file (node). */
struct rdma_file_row {
	uint32_t file;
	const char *host;
	const char *path;
	int has_idle_polls;          /* the recorder reported rdma_idle_polls */
	uint64_t idle_polls;         /* poll_cq calls that returned no completion
					(counted in the kernel for the whole recorder) */
	uint64_t posts, completions, ctrl_calls;
};

struct rdma_result {
	struct rdma_conn *conns;     /* by file, pid, qp_num, then time */
	size_t n_conns;
	struct rdma_counter_row *counters; /* by file, then name */
	size_t n_counters;
	struct rdma_file_row *files;
	size_t n_files;
	uint64_t posts, completions, ctrl_calls; /* events kept (after --pid) */
	uint64_t ambiguous_joins;    /* rows whose remote end matched several QPs */
};

const struct rdma_result *model_rdma_result(const void *state);

#endif
