/* fakeprov.c: the fake RDMA provider behind the stand-in libibverbs
 * (fakeverbs.c), loaded with dlopen like rdma-core loads libmlx5.
 *
 * For: giving flightrec's RDMA probes a data path to trace without an RDMA
 * NIC.  Its post_send / post_recv / poll_cq are static (no exported
 * symbol); libibverbs finds them only through fakeprov_init() and copies
 * them into ibv_context.ops, so a tracer must read the ops table of a live
 * context, as it must for mlx5.
 *
 * Not for: being RDMA.  It is a stand-in for hardware we lack, with the
 * verbs semantics flightrec cares about and nothing else:
 *  - two devices (fakerdma0, fakerdma1), one active port each (LID 0x11,
 *    0x12; GID fe80::GUID);
 *  - RC queue pairs only, RESET -> INIT -> RTR -> RTS with the attribute
 *    masks the kernel requires; the peer named at RTR (dest_qp_num) may live
 *    in this process or in another one: queue pair numbers come from a
 *    registry file in /dev/shm ($FLIGHTREC_FAKE_RDMA_SHM, default
 *    flightrec-fakerdma-UID) that maps qp_num -> pid, and every QP has an
 *    inbound ring file NAME-qpQPNUM there for peers in other processes;
 *  - data moves at post time: RDMA_WRITE[_WITH_IMM] copies into the peer's
 *    memory region (rkey and range checked), SEND[_WITH_IMM] fills the
 *    peer's oldest posted receive (or waits on the peer until one is
 *    posted: infinite RNR retry), RDMA_READ copies from the peer's region
 *    (same process only: post_send fails with EOPNOTSUPP otherwise).  For a
 *    peer in another process the bytes go through its ring and land when
 *    that process next calls post_send, post_recv or poll_cq (a fake
 *    target must poll, which every NCCL-like workload does); errors found
 *    there (bad rkey) are reported on stderr of the target only.  The
 *    responder ignores its own QP state;
 *  - a completion becomes visible to poll_cq latency_us after the post
 *    call entered (per QP: $FLIGHTREC_FAKE_RDMA_LATENCY_US, default 10,
 *    $FLIGHTREC_FAKE_RDMA_QP_LATENCY_US="QPNUM:US,...", or
 *    fakerdma_set_qp_latency()); send completions are FIFO per QP, so a
 *    signaled one implies all earlier unsignaled ones; unsignaled successes
 *    produce nothing; errors always produce a completion;
 *  - every n-th signaled send WR fails with IBV_WC_RETRY_EXC_ERR
 *    (fakerdma_set_qp_error_every(), counting from that call, or
 *    $FLIGHTREC_FAKE_RDMA_ERROR_EVERY, counting from creation),
 *    moving no data; the QP goes to ERR at once: outstanding receives and
 *    every later WR complete with IBV_WC_WR_FLUSH_ERR (not counted toward
 *    n) until the QP goes through RESET, which drops whatever is left
 *    (ibv_modify_qp to ERR flushes receives and later WRs too; send WRs
 *    already posted keep their outcome: their data has moved);
 *  - byte_len of send completions is set for RDMA_READ only (as mlx5);
 *  - one mutex for the whole provider: thread-safe, not scalable. */
#include <infiniband/verbs.h>

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakeprov.h"

#define FP_NUM_DEVICES 2
#define FP_MAX_WR 4096
#define FP_MAX_SGE 16
#define FP_MAX_INLINE 256
#define FP_MAX_CQE 65536
#define FP_REG_MAX 256                  /* live QPs on the machine */
#define FP_RING_BYTES (8u << 20)        /* inbound ring per QP */
#define FP_RING_WAIT_NS 2000000000ull   /* how long a full peer ring may block a post */
#define FP_DEFAULT_LATENCY_US 10
#define FP_REG_MAGIC 0x46505231u        /* "FPR1" */
#define FP_RING_MAGIC 0x46505252u       /* "FPRR" */
#define FP_VENDOR_ERR_RETRY 0x81
#define FP_VENDOR_ERR_FLUSH 0xf9

/* ---- objects --------------------------------------------------------- */

struct fp_context {
	struct verbs_context vctx; /* must be first: libibverbs fills it */
	int dev_idx;
};

struct fp_mr {
	struct ibv_mr mr;
	unsigned access;
	void *map;      /* ibv_reg_dmabuf_mr: our mapping of the fd */
	size_t map_len;
	struct fp_mr *next;
};

struct fp_cq {
	struct ibv_cq cq;
};

/* One send WR, from post to poll. */
struct fp_swqe {
	uint64_t wr_id;
	uint64_t ready_ns;
	uint32_t byte_len;   /* reported for RDMA_READ only */
	uint8_t wc_opcode;   /* enum ibv_wc_opcode */
	uint8_t signaled;
	uint8_t status;      /* enum ibv_wc_status */
	uint8_t vendor_err;
};

/* One receive WR: posted, then matched (done) by an incoming message. */
struct fp_rwqe {
	uint64_t wr_id;
	struct ibv_sge sge[FP_MAX_SGE];
	int num_sge;
	int done;
	uint64_t ready_ns;
	uint32_t byte_len;
	uint32_t src_qp;
	uint16_t slid;
	uint8_t status;
	uint8_t wc_opcode;
	uint8_t vendor_err;
	uint8_t has_imm;
	__be32 imm_data;
};

/* An incoming SEND that found no posted receive yet. */
struct fp_pending {
	struct fp_pending *next;
	uint64_t ready_ns;
	uint32_t src_qp;
	uint16_t slid;
	uint8_t has_imm;
	uint8_t wc_opcode;
	__be32 imm_data;
	uint32_t len;
	unsigned char data[];
};

/* A QP's inbound ring (shared memory): single producer (the peer), single
 * consumer (the owner).  head/tail count bytes since creation. */
struct fp_ring {
	uint32_t magic;
	uint32_t qp_num;
	uint64_t size;
	_Atomic uint64_t head;
	_Atomic uint64_t tail;
	unsigned char _pad[32];
	unsigned char data[];
};

enum fp_msg_type { FP_MSG_WRITE = 1, FP_MSG_SEND = 2 };

struct fp_msg {
	uint32_t type;
	uint32_t len;      /* payload bytes */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t src_qp;
	uint64_t ready_ns;
	uint16_t slid;
	uint8_t has_imm;
	uint8_t _pad;
	__be32 imm_data;
};

struct fp_qp {
	struct ibv_qp qp;
	struct fp_qp *next;
	pid_t owner;
	int sq_sig_all;
	struct ibv_qp_cap cap;
	uint8_t port_num;
	uint16_t pkey_index;
	unsigned qp_access_flags;
	uint32_t dest_qp_num;
	enum ibv_mtu path_mtu;
	struct ibv_ah_attr ah_attr;

	uint64_t latency_ns;
	unsigned error_every;
	uint64_t signaled_executed;
	uint64_t err_ready_ns; /* when the error that moved us to ERR completes */

	struct fp_swqe *sq;
	uint32_t sq_head, sq_tail; /* head: oldest not yet polled */
	uint64_t sq_last_ready;
	struct fp_rwqe *rq;
	uint32_t rq_head, rq_match, rq_tail; /* [head,match) matched, [match,tail) waiting */
	struct fp_pending *pend_head, **pend_tail;

	struct fp_qp *peer_local;  /* peer in this process */
	struct fp_ring *peer_ring; /* peer in another process */
	struct fp_ring *in_ring;   /* ours */
};

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fp_mr *fp_mrs;
static struct fp_qp *fp_qps;
static uint32_t fp_next_key = 0x1000;
static unsigned char *fp_scratch;
static size_t fp_scratch_len;

static void progress(void);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct fp_qp *fqp(struct ibv_qp *qp)
{
	return (struct fp_qp *)qp;
}

static struct fp_context *fctx(struct ibv_context *ctx)
{
	return (struct fp_context *)((char *)ctx - offsetof(struct verbs_context, context));
}

static uint16_t dev_lid(int dev_idx)
{
	return (uint16_t)(0x11 + dev_idx);
}

static uint64_t dev_guid_host(int dev_idx)
{
	return 0x0002c90300fa0000ull + (uint64_t)dev_idx + 1;
}

static uint16_t qp_lid(struct fp_qp *q)
{
	return dev_lid(fctx(q->qp.context)->dev_idx);
}

/* ---- the /dev/shm registry --------------------------------------------- */

struct fp_reg_entry {
	uint32_t qp_num;
	int32_t pid;
};

struct fp_registry {
	uint32_t magic;
	uint32_t next_qpn;
	struct fp_reg_entry e[FP_REG_MAX];
};

static void shm_name(char *buf, size_t len, uint32_t qp_num)
{
	const char *name = getenv("FLIGHTREC_FAKE_RDMA_SHM");
	char def[64];
	if (!name || !*name || strchr(name, '/')) {
		snprintf(def, sizeof(def), "flightrec-fakerdma-%u", (unsigned)getuid());
		name = def;
	}
	if (qp_num)
		snprintf(buf, len, "/dev/shm/%s-qp%u", name, (unsigned)qp_num);
	else
		snprintf(buf, len, "/dev/shm/%s", name);
}

/* A zombie (killed, not yet reaped) owns nothing any more. */
static int pid_alive(int32_t pid)
{
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return 0;
	char path[64], stat[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	stat[n > 0 ? n : 0] = 0;
	const char *paren = strrchr(stat, ')'); /* comm may hold spaces and parens */
	return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

/* Opens and locks the registry, reading it into *reg.  A file unlinked
 * between open and flock (its last QP went away) is reopened. */
static int reg_lock(struct fp_registry *reg)
{
	char path[PATH_MAX];
	shm_name(path, sizeof(path), 0);
	for (int tries = 0; tries < 100; tries++) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		struct stat st;
		if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0) {
			close(fd);
			return -1;
		}
		if (st.st_nlink == 0) {
			close(fd);
			continue;
		}
		memset(reg, 0, sizeof(*reg));
		ssize_t n = pread(fd, reg, sizeof(*reg), 0);
		if (n != (ssize_t)sizeof(*reg) || reg->magic != FP_REG_MAGIC) {
			memset(reg, 0, sizeof(*reg));
			reg->magic = FP_REG_MAGIC;
			reg->next_qpn = 0x100;
		}
		return fd;
	}
	errno = EAGAIN;
	return -1;
}

static int reg_unlock(int fd, const struct fp_registry *reg, int write_back)
{
	int rc = 0;
	if (write_back) {
		int used = 0;
		for (int i = 0; i < FP_REG_MAX; i++)
			used |= reg->e[i].qp_num != 0;
		if (!used) {
			char path[PATH_MAX];
			shm_name(path, sizeof(path), 0);
			unlink(path);
		} else if (pwrite(fd, reg, sizeof(*reg), 0) != (ssize_t)sizeof(*reg)) {
			rc = -1;
		}
	}
	close(fd); /* drops the flock */
	return rc;
}

static void reg_reclaim(struct fp_registry *reg, int i)
{
	char path[PATH_MAX];
	shm_name(path, sizeof(path), reg->e[i].qp_num);
	unlink(path);
	reg->e[i].qp_num = 0;
	reg->e[i].pid = 0;
}

/* Picks an unused qp_num and records it as ours; 0 on failure. */
static uint32_t reg_alloc_qpn(void)
{
	struct fp_registry reg;
	int fd = reg_lock(&reg);
	if (fd < 0)
		return 0;
	int slot = -1;
	for (int i = 0; i < FP_REG_MAX; i++) {
		if (reg.e[i].qp_num && !pid_alive(reg.e[i].pid))
			reg_reclaim(&reg, i);
		if (!reg.e[i].qp_num && slot < 0)
			slot = i;
	}
	uint32_t qpn = 0;
	while (slot >= 0 && !qpn) {
		uint32_t cand = reg.next_qpn;
		reg.next_qpn = cand + 1 > 0xffffff ? 0x100 : cand + 1;
		int used = 0;
		for (int i = 0; i < FP_REG_MAX; i++)
			used |= reg.e[i].qp_num == cand;
		if (!used)
			qpn = cand;
	}
	if (qpn) {
		reg.e[slot].qp_num = qpn;
		reg.e[slot].pid = (int32_t)getpid();
	} else {
		errno = ENOMEM;
	}
	if (reg_unlock(fd, &reg, 1) < 0)
		qpn = 0;
	return qpn;
}

static void reg_free_qpn(uint32_t qpn)
{
	struct fp_registry reg;
	int fd = reg_lock(&reg);
	if (fd < 0)
		return;
	for (int i = 0; i < FP_REG_MAX; i++)
		if (reg.e[i].qp_num == qpn && reg.e[i].pid == (int32_t)getpid())
			reg_reclaim(&reg, i);
	reg_unlock(fd, &reg, 1);
}

static int32_t reg_lookup(uint32_t qpn)
{
	struct fp_registry reg;
	int fd = reg_lock(&reg);
	if (fd < 0)
		return 0;
	int32_t pid = 0;
	for (int i = 0; i < FP_REG_MAX; i++)
		if (reg.e[i].qp_num == qpn && pid_alive(reg.e[i].pid))
			pid = reg.e[i].pid;
	reg_unlock(fd, &reg, 0);
	return pid;
}

static size_t ring_map_len(void)
{
	return sizeof(struct fp_ring) + FP_RING_BYTES;
}

static struct fp_ring *ring_create(uint32_t qpn)
{
	char path[PATH_MAX];
	shm_name(path, sizeof(path), qpn);
	unlink(path); /* a stale ring of a dead process with the same number */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)ring_map_len()) < 0) {
		close(fd);
		unlink(path);
		return NULL;
	}
	struct fp_ring *r = mmap(NULL, ring_map_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED) {
		unlink(path);
		return NULL;
	}
	r->qp_num = qpn;
	r->size = FP_RING_BYTES;
	atomic_store(&r->head, 0);
	atomic_store(&r->tail, 0);
	atomic_store_explicit((_Atomic uint32_t *)&r->magic, FP_RING_MAGIC, memory_order_release);
	return r;
}

static struct fp_ring *ring_open(uint32_t qpn)
{
	char path[PATH_MAX];
	shm_name(path, sizeof(path), qpn);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size != ring_map_len()) {
		close(fd);
		return NULL;
	}
	struct fp_ring *r = mmap(NULL, ring_map_len(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return NULL;
	if (r->magic != FP_RING_MAGIC || r->qp_num != qpn || r->size != FP_RING_BYTES) {
		munmap(r, ring_map_len());
		return NULL;
	}
	return r;
}

static void ring_copy_in(struct fp_ring *r, uint64_t pos, const void *src, size_t len)
{
	size_t off = (size_t)(pos % r->size), first = r->size - off;
	if (first > len)
		first = len;
	memcpy(r->data + off, src, first);
	memcpy(r->data, (const char *)src + first, len - first);
}

static void ring_copy_out(struct fp_ring *r, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos % r->size), first = r->size - off;
	if (first > len)
		first = len;
	memcpy(dst, r->data + off, first);
	memcpy((char *)dst + first, r->data, len - first);
}

/* Appends a message whose payload is gathered from sg.  0 or an errno. */
static int ring_put(struct fp_ring *r, const struct fp_msg *m, const struct ibv_sge *sg, int nsg)
{
	uint64_t need = (sizeof(*m) + m->len + 7) & ~7ull;
	if (need > r->size / 2)
		return EMSGSIZE;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t t0 = 0;
	while (r->size - (head - atomic_load_explicit(&r->tail, memory_order_acquire)) < need) {
		uint64_t t = now_ns();
		if (!t0)
			t0 = t;
		else if (t - t0 > FP_RING_WAIT_NS)
			return ENOBUFS; /* the peer process stopped polling */
		progress(); /* the peer may be waiting for room in our ring */
		sched_yield();
	}
	ring_copy_in(r, head, m, sizeof(*m));
	uint64_t pos = head + sizeof(*m);
	for (int i = 0; i < nsg; i++) {
		ring_copy_in(r, pos, (const void *)(uintptr_t)sg[i].addr, sg[i].length);
		pos += sg[i].length;
	}
	atomic_store_explicit(&r->head, head + need, memory_order_release);
	return 0;
}

/* ---- memory regions ---------------------------------------------------- */

static struct fp_mr *mr_by_key(uint32_t key, int remote)
{
	for (struct fp_mr *m = fp_mrs; m; m = m->next)
		if ((remote ? m->mr.rkey : m->mr.lkey) == key)
			return m;
	return NULL;
}

static int range_in_mr(const struct fp_mr *m, uint64_t addr, uint64_t len)
{
	uint64_t base = (uintptr_t)m->mr.addr;
	return addr >= base && len <= m->mr.length && addr - base <= m->mr.length - len;
}

static int sges_valid(const struct ibv_sge *sg, int nsg)
{
	for (int i = 0; i < nsg; i++) {
		if (!sg[i].length)
			continue;
		struct fp_mr *m = mr_by_key(sg[i].lkey, 0);
		if (!m || !range_in_mr(m, sg[i].addr, sg[i].length))
			return 0;
	}
	return 1;
}

static uint64_t sge_bytes(const struct ibv_sge *sg, int nsg)
{
	uint64_t n = 0;
	for (int i = 0; i < nsg; i++)
		n += sg[i].length;
	return n;
}

/* Copies len bytes from a gather list into a scatter list. */
static void sg_copy(const struct ibv_sge *dst, int ndst, const struct ibv_sge *src, int nsrc)
{
	int di = 0, si = 0;
	uint32_t doff = 0, soff = 0;
	while (di < ndst && si < nsrc) {
		uint32_t dl = dst[di].length - doff, sl = src[si].length - soff;
		uint32_t n = dl < sl ? dl : sl;
		if (n)
			memmove((void *)(uintptr_t)(dst[di].addr + doff),
				(const void *)(uintptr_t)(src[si].addr + soff), n);
		doff += n;
		soff += n;
		if (doff == dst[di].length) {
			di++;
			doff = 0;
		}
		if (soff == src[si].length) {
			si++;
			soff = 0;
		}
	}
}

/* ---- delivery at the responder ----------------------------------------- */

static void enter_error(struct fp_qp *q, uint64_t ready_ns)
{
	q->qp.state = IBV_QPS_ERR;
	q->err_ready_ns = ready_ns;
	for (; q->rq_match != q->rq_tail; q->rq_match++) {
		struct fp_rwqe *e = &q->rq[q->rq_match % q->cap.max_recv_wr];
		e->done = 1;
		e->status = IBV_WC_WR_FLUSH_ERR;
		e->vendor_err = FP_VENDOR_ERR_FLUSH;
		e->ready_ns = ready_ns;
		e->byte_len = 0;
	}
}

static void rwqe_fill(struct fp_rwqe *e, const struct ibv_sge *src, int nsrc, uint32_t len,
		      uint64_t ready_ns, uint32_t src_qp, uint16_t slid, int has_imm, __be32 imm,
		      uint8_t wc_opcode)
{
	uint64_t cap = sge_bytes(e->sge, e->num_sge);
	e->done = 1;
	e->ready_ns = ready_ns;
	e->src_qp = src_qp;
	e->slid = slid;
	e->has_imm = (uint8_t)has_imm;
	e->imm_data = imm;
	e->wc_opcode = wc_opcode;
	e->byte_len = len;
	e->vendor_err = 0;
	if (wc_opcode == IBV_WC_RECV && len > cap) {
		e->status = IBV_WC_LOC_LEN_ERR;
		e->byte_len = 0;
		return;
	}
	e->status = IBV_WC_SUCCESS;
	if (src)
		sg_copy(e->sge, e->num_sge, src, nsrc);
}

/* An incoming SEND (or WRITE_WITH_IMM, src NULL): fills the oldest posted
 * receive of q, or waits on q for one. */
static int deliver_recv(struct fp_qp *q, const struct ibv_sge *src, int nsrc, uint32_t len,
			uint64_t ready_ns, uint32_t src_qp, uint16_t slid, int has_imm, __be32 imm,
			uint8_t wc_opcode)
{
	if (q->rq_match != q->rq_tail) {
		struct fp_rwqe *e = &q->rq[q->rq_match++ % q->cap.max_recv_wr];
		rwqe_fill(e, src, nsrc, len, ready_ns, src_qp, slid, has_imm, imm, wc_opcode);
		return e->status == IBV_WC_SUCCESS ? IBV_WC_SUCCESS : IBV_WC_REM_INV_REQ_ERR;
	}
	uint32_t copy = src ? len : 0;
	struct fp_pending *p = malloc(sizeof(*p) + copy);
	if (!p)
		return IBV_WC_REM_OP_ERR;
	p->next = NULL;
	p->ready_ns = ready_ns;
	p->src_qp = src_qp;
	p->slid = slid;
	p->has_imm = (uint8_t)has_imm;
	p->imm_data = imm;
	p->wc_opcode = wc_opcode;
	p->len = len;
	struct ibv_sge dst = {.addr = (uintptr_t)p->data, .length = copy};
	if (copy)
		sg_copy(&dst, 1, src, nsrc);
	*q->pend_tail = p;
	q->pend_tail = &p->next;
	return IBV_WC_SUCCESS;
}

static int deliver_write(uint64_t raddr, uint32_t rkey, const struct ibv_sge *src, int nsrc,
			 uint32_t len)
{
	struct fp_mr *m = mr_by_key(rkey, 1);
	if (!m || !(m->access & IBV_ACCESS_REMOTE_WRITE) || !range_in_mr(m, raddr, len))
		return IBV_WC_REM_ACCESS_ERR;
	struct ibv_sge dst = {.addr = raddr, .length = len};
	sg_copy(&dst, 1, src, nsrc);
	return IBV_WC_SUCCESS;
}

/* Applies what other processes put into the rings of our QPs. */
static void progress(void)
{
	pid_t self = getpid();
	for (struct fp_qp *q = fp_qps; q; q = q->next) {
		struct fp_ring *r = q->in_ring;
		if (!r || q->owner != self)
			continue;
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
		while (tail != head) {
			struct fp_msg m;
			ring_copy_out(r, tail, &m, sizeof(m));
			uint64_t need = (sizeof(m) + m.len + 7) & ~7ull;
			if (m.len > fp_scratch_len) {
				unsigned char *s = realloc(fp_scratch, m.len);
				if (!s) {
					fprintf(stderr, "fakerdma: qp 0x%x: out of memory, dropping %u bytes\n",
						q->qp.qp_num, m.len);
					tail += need;
					continue;
				}
				fp_scratch = s;
				fp_scratch_len = m.len;
			}
			ring_copy_out(r, tail + sizeof(m), fp_scratch, m.len);
			struct ibv_sge src = {.addr = (uintptr_t)fp_scratch, .length = m.len};
			int st = IBV_WC_SUCCESS;
			if (m.type == FP_MSG_WRITE) {
				st = deliver_write(m.raddr, m.rkey, &src, 1, m.len);
				if (st == IBV_WC_SUCCESS && m.has_imm)
					st = deliver_recv(q, NULL, 0, m.len, m.ready_ns, m.src_qp, m.slid, 1,
							  m.imm_data, IBV_WC_RECV_RDMA_WITH_IMM);
			} else if (m.type == FP_MSG_SEND) {
				st = deliver_recv(q, &src, 1, m.len, m.ready_ns, m.src_qp, m.slid,
						  m.has_imm, m.imm_data, IBV_WC_RECV);
			}
			if (st != IBV_WC_SUCCESS)
				fprintf(stderr, "fakerdma: qp 0x%x: incoming %s from qp 0x%x failed: %s "
					"(the sender, in another process, is not told)\n", q->qp.qp_num,
					m.type == FP_MSG_WRITE ? "RDMA_WRITE" : "SEND", m.src_qp,
					ibv_wc_status_str((enum ibv_wc_status)st));
			tail += need;
		}
		atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
}

/* ---- the requester ------------------------------------------------------ */

static void resolve_peer(struct fp_qp *q)
{
	if (q->peer_local || q->peer_ring)
		return;
	/* numbers are unique machine-wide, so one of ours is the one */
	for (struct fp_qp *p = fp_qps; p; p = p->next)
		if (p->qp.qp_num == q->dest_qp_num && p->owner == getpid())
			q->peer_local = p;
	if (!q->peer_local && reg_lookup(q->dest_qp_num))
		q->peer_ring = ring_open(q->dest_qp_num);
}

/* Executes one send WR; returns a wc status, or -errno when the post
 * itself must fail. */
static int execute(struct fp_qp *q, const struct ibv_send_wr *wr, uint64_t ready_ns,
		   uint32_t *byte_len)
{
	uint64_t len64 = sge_bytes(wr->sg_list, wr->num_sge);
	if (len64 > UINT32_MAX)
		return IBV_WC_LOC_LEN_ERR;
	uint32_t len = (uint32_t)len64;
	if (!(wr->send_flags & IBV_SEND_INLINE) && !sges_valid(wr->sg_list, wr->num_sge))
		return IBV_WC_LOC_PROT_ERR;
	resolve_peer(q);
	if (!q->peer_local && !q->peer_ring)
		return IBV_WC_RETRY_EXC_ERR; /* nobody answers at dest_qp_num */
	int has_imm = wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint16_t slid = qp_lid(q);

	if (q->peer_ring) {
		struct fp_msg m = {
			.len = len, .raddr = wr->wr.rdma.remote_addr, .rkey = wr->wr.rdma.rkey,
			.src_qp = q->qp.qp_num, .ready_ns = ready_ns, .slid = slid,
			.has_imm = (uint8_t)has_imm, .imm_data = wr->imm_data,
		};
		switch (wr->opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			m.type = FP_MSG_WRITE;
			break;
		case IBV_WR_SEND:
		case IBV_WR_SEND_WITH_IMM:
			m.type = FP_MSG_SEND;
			break;
		default:
			return -EOPNOTSUPP; /* RDMA_READ across processes */
		}
		int rc = ring_put(q->peer_ring, &m, wr->sg_list, wr->num_sge);
		return rc ? -rc : IBV_WC_SUCCESS;
	}

	struct fp_qp *p = q->peer_local;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		int st = deliver_write(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey, wr->sg_list,
				       wr->num_sge, len);
		if (st == IBV_WC_SUCCESS && has_imm)
			st = deliver_recv(p, NULL, 0, len, ready_ns, q->qp.qp_num, slid, 1,
					  wr->imm_data, IBV_WC_RECV_RDMA_WITH_IMM);
		return st;
	}
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return deliver_recv(p, wr->sg_list, wr->num_sge, len, ready_ns, q->qp.qp_num, slid,
				    has_imm, wr->imm_data, IBV_WC_RECV);
	case IBV_WR_RDMA_READ: {
		struct fp_mr *m = mr_by_key(wr->wr.rdma.rkey, 1);
		if (!m || !(m->access & IBV_ACCESS_REMOTE_READ) ||
		    !range_in_mr(m, wr->wr.rdma.remote_addr, len))
			return IBV_WC_REM_ACCESS_ERR;
		struct ibv_sge src = {.addr = wr->wr.rdma.remote_addr, .length = len};
		sg_copy(wr->sg_list, wr->num_sge, &src, 1);
		*byte_len = len;
		return IBV_WC_SUCCESS;
	}
	default:
		return -EINVAL;
	}
}

static int wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return IBV_WC_SEND;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	default:
		return -1;
	}
}

static int fp_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	uint64_t entry_ns = now_ns();
	struct fp_qp *q = fqp(ibqp);
	int rc = 0;
	pthread_mutex_lock(&fp_lock);
	progress();
	if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR) {
		rc = EINVAL;
		*bad_wr = wr;
	}
	for (; wr && !rc; wr = wr->next) {
		int op = wc_opcode_of(wr->opcode);
		uint64_t len = sge_bytes(wr->sg_list, wr->num_sge);
		if (op < 0 || wr->num_sge < 0 || (unsigned)wr->num_sge > q->cap.max_send_sge ||
		    ((wr->send_flags & IBV_SEND_INLINE) && len > q->cap.max_inline_data)) {
			rc = EINVAL;
		} else if (q->sq_tail - q->sq_head >= q->cap.max_send_wr) {
			rc = ENOMEM;
		}
		if (rc) {
			*bad_wr = wr;
			break;
		}
		struct fp_swqe e = {
			.wr_id = wr->wr_id,
			.wc_opcode = (uint8_t)op,
			.signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED),
		};
		/* flushed WRs complete at once, but never before the error */
		uint64_t ready = entry_ns + (q->qp.state == IBV_QPS_ERR ? 0 : q->latency_ns);
		if (ready < q->sq_last_ready)
			ready = q->sq_last_ready;
		if (q->qp.state == IBV_QPS_ERR) {
			e.status = IBV_WC_WR_FLUSH_ERR;
			e.vendor_err = FP_VENDOR_ERR_FLUSH;
			if (ready < q->err_ready_ns)
				ready = q->err_ready_ns;
		} else if (e.signaled && q->error_every &&
			   ++q->signaled_executed % q->error_every == 0) {
			e.status = IBV_WC_RETRY_EXC_ERR;
			e.vendor_err = FP_VENDOR_ERR_RETRY;
			enter_error(q, ready);
		} else {
			if (e.signaled && !q->error_every)
				q->signaled_executed++;
			int st = execute(q, wr, ready, &e.byte_len);
			if (st < 0) {
				rc = -st;
				*bad_wr = wr;
				break;
			}
			e.status = (uint8_t)st;
			if (st != IBV_WC_SUCCESS) {
				e.vendor_err = st == IBV_WC_RETRY_EXC_ERR ? FP_VENDOR_ERR_RETRY : 0;
				enter_error(q, ready);
			}
		}
		e.ready_ns = ready;
		q->sq_last_ready = ready;
		q->sq[q->sq_tail++ % q->cap.max_send_wr] = e;
	}
	pthread_mutex_unlock(&fp_lock);
	return rc;
}

static int fp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint64_t entry_ns = now_ns();
	struct fp_qp *q = fqp(ibqp);
	int rc = 0;
	pthread_mutex_lock(&fp_lock);
	progress();
	if (q->qp.state == IBV_QPS_RESET) {
		rc = EINVAL;
		*bad_wr = wr;
	}
	for (; wr && !rc; wr = wr->next) {
		if (wr->num_sge < 0 || (unsigned)wr->num_sge > q->cap.max_recv_sge)
			rc = EINVAL;
		else if (q->rq_tail - q->rq_head >= q->cap.max_recv_wr)
			rc = ENOMEM;
		if (rc) {
			*bad_wr = wr;
			break;
		}
		struct fp_rwqe *e = &q->rq[q->rq_tail++ % q->cap.max_recv_wr];
		memset(e, 0, sizeof(*e));
		e->wr_id = wr->wr_id;
		e->num_sge = wr->num_sge;
		if (wr->num_sge) /* a request without SGEs may pass NULL */
			memcpy(e->sge, wr->sg_list, sizeof(e->sge[0]) * (size_t)wr->num_sge);
		if (q->qp.state == IBV_QPS_ERR) {
			e->done = 1;
			e->status = IBV_WC_WR_FLUSH_ERR;
			e->vendor_err = FP_VENDOR_ERR_FLUSH;
			e->ready_ns = entry_ns > q->err_ready_ns ? entry_ns : q->err_ready_ns;
			q->rq_match++;
			continue;
		}
		struct fp_pending *p = q->pend_head;
		if (p && q->rq_match == q->rq_tail - 1) {
			q->pend_head = p->next;
			if (!q->pend_head)
				q->pend_tail = &q->pend_head;
			struct ibv_sge src = {.addr = (uintptr_t)p->data, .length = p->len};
			int has_data = p->wc_opcode == IBV_WC_RECV;
			q->rq_match++;
			rwqe_fill(e, has_data ? &src : NULL, 1, p->len,
				  p->ready_ns > entry_ns ? p->ready_ns : entry_ns, p->src_qp, p->slid,
				  p->has_imm, p->imm_data, p->wc_opcode);
			free(p);
		}
	}
	pthread_mutex_unlock(&fp_lock);
	return rc;
}

static int fp_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n = 0;
	pthread_mutex_lock(&fp_lock);
	progress();
	uint64_t now = now_ns();
	pid_t self = getpid();
	while (n < num_entries) {
		/* the oldest ready completion over the QPs feeding this CQ */
		struct fp_qp *best = NULL;
		int best_is_recv = 0;
		uint64_t best_ready = UINT64_MAX;
		for (struct fp_qp *q = fp_qps; q; q = q->next) {
			if (q->owner != self)
				continue;
			if (q->qp.send_cq == cq && q->sq_head != q->sq_tail) {
				struct fp_swqe *e = &q->sq[q->sq_head % q->cap.max_send_wr];
				if (e->ready_ns <= now && e->ready_ns < best_ready) {
					best = q;
					best_is_recv = 0;
					best_ready = e->ready_ns;
				}
			}
			if (q->qp.recv_cq == cq && q->rq_head != q->rq_match) {
				struct fp_rwqe *e = &q->rq[q->rq_head % q->cap.max_recv_wr];
				if (e->ready_ns <= now && e->ready_ns < best_ready) {
					best = q;
					best_is_recv = 1;
					best_ready = e->ready_ns;
				}
			}
		}
		if (!best)
			break;
		struct ibv_wc *w = &wc[n];
		if (best_is_recv) {
			struct fp_rwqe *e = &best->rq[best->rq_head++ % best->cap.max_recv_wr];
			memset(w, 0, sizeof(*w));
			w->wr_id = e->wr_id;
			w->status = (enum ibv_wc_status)e->status;
			w->opcode = (enum ibv_wc_opcode)e->wc_opcode;
			w->vendor_err = e->vendor_err;
			w->byte_len = e->byte_len;
			w->qp_num = best->qp.qp_num;
			w->src_qp = e->src_qp;
			w->slid = e->slid;
			if (e->has_imm) {
				w->wc_flags = IBV_WC_WITH_IMM;
				w->imm_data = e->imm_data;
			}
			n++;
		} else {
			struct fp_swqe *e = &best->sq[best->sq_head++ % best->cap.max_send_wr];
			if (!e->signaled && e->status == IBV_WC_SUCCESS)
				continue; /* done, reported by the next signaled one */
			memset(w, 0, sizeof(*w));
			w->wr_id = e->wr_id;
			w->status = (enum ibv_wc_status)e->status;
			w->opcode = (enum ibv_wc_opcode)e->wc_opcode;
			w->vendor_err = e->vendor_err;
			w->byte_len = e->byte_len;
			w->qp_num = best->qp.qp_num;
			n++;
		}
	}
	pthread_mutex_unlock(&fp_lock);
	return n;
}

static int fp_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	(void)cq;
	(void)solicited_only;
	return EOPNOTSUPP; /* no completion channels: poll */
}

/* ---- control path ------------------------------------------------------- */

static const char *fp_device_name(int dev_idx)
{
	static const char *const names[FP_NUM_DEVICES] = {"fakerdma0", "fakerdma1"};
	return dev_idx >= 0 && dev_idx < FP_NUM_DEVICES ? names[dev_idx] : "fakerdma?";
}

static uint64_t fp_device_guid(int dev_idx)
{
	return htobe64(dev_guid_host(dev_idx));
}

static struct ibv_context *fp_alloc_context(struct ibv_device *device, int dev_idx)
{
	(void)device;
	struct fp_context *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev_idx = dev_idx;
	return &c->vctx.context;
}

static void fp_free_context(struct ibv_context *ctx)
{
	free(fctx(ctx));
}

static int fp_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	int idx = fctx(ctx)->dev_idx;
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "flightrec-fake-1.0");
	a->node_guid = fp_device_guid(idx);
	a->sys_image_guid = fp_device_guid(idx);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0x02c9;
	a->vendor_part_id = 0xf4e;
	a->max_qp = FP_REG_MAX;
	a->max_qp_wr = FP_MAX_WR;
	a->max_sge = FP_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = FP_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

static int fp_query_port(struct ibv_context *ctx, uint8_t port_num, struct ibv_port_attr *a)
{
	if (port_num != 1)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->max_msg_sz = 1u << 30;
	a->pkey_tbl_len = 1;
	a->lid = dev_lid(fctx(ctx)->dev_idx);
	a->sm_lid = 1;
	a->max_vl_num = 1;
	a->active_width = 4;  /* 4x */
	a->active_speed = 32; /* EDR */
	a->phys_state = 5;    /* LinkUp */
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

static int fp_query_gid(struct ibv_context *ctx, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (port_num != 1 || index != 0)
		return EINVAL;
	gid->global.subnet_prefix = htobe64(0xfe80000000000000ull);
	gid->global.interface_id = fp_device_guid(fctx(ctx)->dev_idx);
	return 0;
}

static struct ibv_pd *fp_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = ctx;
	pthread_mutex_lock(&fp_lock);
	pd->handle = fp_next_key++;
	pthread_mutex_unlock(&fp_lock);
	return pd;
}

static int fp_dealloc_pd(struct ibv_pd *pd)
{
	int busy = 0;
	pthread_mutex_lock(&fp_lock);
	for (struct fp_mr *m = fp_mrs; m; m = m->next)
		busy |= m->mr.pd == pd;
	for (struct fp_qp *q = fp_qps; q; q = q->next)
		busy |= q->qp.pd == pd;
	pthread_mutex_unlock(&fp_lock);
	if (busy)
		return EBUSY;
	free(pd);
	return 0;
}

static struct ibv_mr *mr_add(struct ibv_pd *pd, void *addr, size_t length, unsigned access,
			     void *map, size_t map_len)
{
	struct fp_mr *m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->access = access;
	m->map = map;
	m->map_len = map_len;
	pthread_mutex_lock(&fp_lock);
	m->mr.handle = fp_next_key;
	m->mr.lkey = m->mr.rkey = fp_next_key++;
	m->next = fp_mrs;
	fp_mrs = m;
	pthread_mutex_unlock(&fp_lock);
	return &m->mr;
}

static int access_valid(unsigned access)
{
	/* remote write / atomic need local write, as the kernel demands */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return 0;
	return 1;
}

static struct ibv_mr *fp_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned access)
{
	if (!length || !addr || iova != (uintptr_t)addr || !access_valid(access)) {
		errno = EINVAL; /* the fake does not translate iova != addr */
		return NULL;
	}
	return mr_add(pd, addr, length, access, NULL, 0);
}

/* A dma-buf is whatever the fd maps: a memfd stands in for GPU memory. */
static struct ibv_mr *fp_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				       uint64_t iova, int fd, unsigned access)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = offset & ~(uint64_t)(page - 1);
	size_t map_len = length + (size_t)(offset - start);
	if (!length || !access_valid(access)) {
		errno = EINVAL;
		return NULL;
	}
	void *map = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
	if (map == MAP_FAILED)
		return NULL;
	(void)iova; /* addressed by the mapping, like fp_reg_mr */
	struct ibv_mr *mr = mr_add(pd, (char *)map + (offset - start), length, access, map, map_len);
	if (!mr)
		munmap(map, map_len);
	return mr;
}

static int fp_dereg_mr(struct ibv_mr *ibmr)
{
	pthread_mutex_lock(&fp_lock);
	struct fp_mr **pp = &fp_mrs;
	while (*pp && &(*pp)->mr != ibmr)
		pp = &(*pp)->next;
	struct fp_mr *m = *pp;
	if (m)
		*pp = m->next;
	pthread_mutex_unlock(&fp_lock);
	if (!m)
		return EINVAL;
	if (m->map)
		munmap(m->map, m->map_len);
	free(m);
	return 0;
}

static struct ibv_comp_channel *fp_create_comp_channel(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->context = ctx;
	ch->fd = -1; /* no events are ever delivered: req_notify_cq fails */
	return ch;
}

static int fp_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	free(ch);
	return 0;
}

static struct ibv_cq *fp_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				   struct ibv_comp_channel *channel, int comp_vector)
{
	if (cqe < 1 || cqe > FP_MAX_CQE || comp_vector < 0 || comp_vector >= 1) {
		errno = EINVAL;
		return NULL;
	}
	struct fp_cq *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->cq.context = ctx;
	c->cq.channel = channel;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	pthread_mutex_lock(&fp_lock);
	c->cq.handle = fp_next_key++;
	pthread_mutex_unlock(&fp_lock);
	return &c->cq;
}

static int fp_destroy_cq(struct ibv_cq *cq)
{
	int busy = 0;
	pthread_mutex_lock(&fp_lock);
	for (struct fp_qp *q = fp_qps; q; q = q->next)
		busy |= q->qp.send_cq == cq || q->qp.recv_cq == cq;
	pthread_mutex_unlock(&fp_lock);
	if (busy)
		return EBUSY;
	pthread_mutex_destroy(&cq->mutex);
	pthread_cond_destroy(&cq->cond);
	free(cq);
	return 0;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long long x = strtoull(v, &end, 0);
	return *end ? def : (uint64_t)x;
}

/* FLIGHTREC_FAKE_RDMA_QP_LATENCY_US="QPNUM:US,QPNUM:US" (QPNUM decimal or 0x..) */
static int env_qp_latency_us(uint32_t qpn, uint64_t *us)
{
	const char *v = getenv("FLIGHTREC_FAKE_RDMA_QP_LATENCY_US");
	while (v && *v) {
		char *end;
		unsigned long n = strtoul(v, &end, 0);
		if (*end != ':')
			return 0;
		unsigned long long t = strtoull(end + 1, &end, 0);
		if (n == qpn) {
			*us = t;
			return 1;
		}
		v = *end == ',' ? end + 1 : NULL;
	}
	return 0;
}

static struct ibv_qp *fp_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct ibv_qp_cap *cap = &a->cap;
	if (a->qp_type != IBV_QPT_RC || a->srq) {
		errno = EOPNOTSUPP; /* RC without SRQ only */
		return NULL;
	}
	if (!a->send_cq || !a->recv_cq || !cap->max_send_wr || cap->max_send_wr > FP_MAX_WR ||
	    cap->max_recv_wr > FP_MAX_WR || cap->max_send_sge > FP_MAX_SGE ||
	    cap->max_recv_sge > FP_MAX_SGE || cap->max_inline_data > FP_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	struct fp_qp *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->cap = *cap;
	if (!q->cap.max_recv_wr)
		q->cap.max_recv_wr = 1;
	if (!q->cap.max_send_sge)
		q->cap.max_send_sge = 1;
	if (!q->cap.max_recv_sge)
		q->cap.max_recv_sge = 1;
	q->sq = calloc(q->cap.max_send_wr, sizeof(*q->sq));
	q->rq = calloc(q->cap.max_recv_wr, sizeof(*q->rq));
	uint32_t qpn = (q->sq && q->rq) ? reg_alloc_qpn() : 0;
	q->in_ring = qpn ? ring_create(qpn) : NULL;
	if (!q->in_ring) {
		int err = errno ? errno : ENOMEM;
		if (qpn)
			reg_free_qpn(qpn);
		free(q->sq);
		free(q->rq);
		free(q);
		errno = err;
		return NULL;
	}
	q->owner = getpid();
	q->sq_sig_all = a->sq_sig_all;
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_num = qpn;
	q->qp.handle = qpn;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	q->pend_tail = &q->pend_head;
	uint64_t us = env_u64("FLIGHTREC_FAKE_RDMA_LATENCY_US", FP_DEFAULT_LATENCY_US);
	env_qp_latency_us(qpn, &us);
	q->latency_ns = us * 1000;
	q->error_every = (unsigned)env_u64("FLIGHTREC_FAKE_RDMA_ERROR_EVERY", 0);
	*cap = q->cap;
	pthread_mutex_lock(&fp_lock);
	q->next = fp_qps;
	fp_qps = q;
	pthread_mutex_unlock(&fp_lock);
	return &q->qp;
}

static void qp_reset(struct fp_qp *q)
{
	q->sq_head = q->sq_tail = 0;
	q->sq_last_ready = 0;
	q->rq_head = q->rq_match = q->rq_tail = 0;
	while (q->pend_head) {
		struct fp_pending *p = q->pend_head;
		q->pend_head = p->next;
		free(p);
	}
	q->pend_tail = &q->pend_head;
	q->peer_local = NULL;
	if (q->peer_ring)
		munmap(q->peer_ring, ring_map_len());
	q->peer_ring = NULL;
	q->err_ready_ns = 0;
}

#define FP_MASK_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define FP_MASK_RTR                                                                          \
	(IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |      \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define FP_MASK_RTS                                                                          \
	(IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | \
	 IBV_QP_MAX_QP_RD_ATOMIC)

static int fp_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct fp_qp *q = fqp(ibqp);
	int rc = 0;
	pthread_mutex_lock(&fp_lock);
	enum ibv_qp_state cur = q->qp.state;
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		rc = EINVAL;
	else if (next == IBV_QPS_RESET)
		qp_reset(q);
	else if (next == IBV_QPS_ERR)
		enter_error(q, now_ns());
	else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT)
		rc = (mask & FP_MASK_INIT) == FP_MASK_INIT ? 0 : EINVAL;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT)
		rc = 0;
	else if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
		rc = (mask & FP_MASK_RTR) == FP_MASK_RTR ? 0 : EINVAL;
	else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
		rc = (mask & FP_MASK_RTS) == FP_MASK_RTS ? 0 : EINVAL;
	else if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS)
		rc = 0;
	else
		rc = EINVAL;
	if (!rc && (mask & IBV_QP_PORT) && attr->port_num != 1)
		rc = EINVAL;
	if (!rc && (mask & IBV_QP_DEST_QPN) && (attr->dest_qp_num & 0xff000000))
		rc = EINVAL;
	if (!rc) {
		if (mask & IBV_QP_PORT)
			q->port_num = attr->port_num;
		if (mask & IBV_QP_PKEY_INDEX)
			q->pkey_index = attr->pkey_index;
		if (mask & IBV_QP_ACCESS_FLAGS)
			q->qp_access_flags = attr->qp_access_flags;
		if (mask & IBV_QP_PATH_MTU)
			q->path_mtu = attr->path_mtu;
		if (mask & IBV_QP_AV)
			q->ah_attr = attr->ah_attr;
		if (mask & IBV_QP_DEST_QPN) {
			q->dest_qp_num = attr->dest_qp_num;
			q->peer_local = NULL;
			if (q->peer_ring)
				munmap(q->peer_ring, ring_map_len());
			q->peer_ring = NULL;
		}
		q->qp.state = next;
		if (next == IBV_QPS_RTR)
			resolve_peer(q); /* may fail: retried at post time */
	}
	pthread_mutex_unlock(&fp_lock);
	return rc;
}

static int fp_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		       struct ibv_qp_init_attr *init_attr)
{
	(void)mask;
	struct fp_qp *q = fqp(ibqp);
	pthread_mutex_lock(&fp_lock);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = q->qp.state;
	attr->cur_qp_state = q->qp.state;
	attr->path_mtu = q->path_mtu;
	attr->dest_qp_num = q->dest_qp_num;
	attr->qp_access_flags = q->qp_access_flags;
	attr->cap = q->cap;
	attr->ah_attr = q->ah_attr;
	attr->pkey_index = q->pkey_index;
	attr->port_num = q->port_num;
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = q->qp.qp_context;
		init_attr->send_cq = q->qp.send_cq;
		init_attr->recv_cq = q->qp.recv_cq;
		init_attr->cap = q->cap;
		init_attr->qp_type = IBV_QPT_RC;
		init_attr->sq_sig_all = q->sq_sig_all;
	}
	pthread_mutex_unlock(&fp_lock);
	return 0;
}

static void qp_free(struct fp_qp *q)
{
	for (struct fp_qp *p = fp_qps; p; p = p->next)
		if (p->peer_local == q)
			p->peer_local = NULL;
	qp_reset(q);
	if (q->in_ring)
		munmap(q->in_ring, ring_map_len());
	if (q->owner == getpid())
		reg_free_qpn(q->qp.qp_num); /* also unlinks the ring file */
}

static int fp_destroy_qp(struct ibv_qp *ibqp)
{
	struct fp_qp *q = fqp(ibqp);
	pthread_mutex_lock(&fp_lock);
	struct fp_qp **pp = &fp_qps;
	while (*pp && *pp != q)
		pp = &(*pp)->next;
	if (!*pp) {
		pthread_mutex_unlock(&fp_lock);
		return EINVAL;
	}
	*pp = q->next;
	qp_free(q);
	pthread_mutex_unlock(&fp_lock);
	pthread_mutex_destroy(&q->qp.mutex);
	pthread_cond_destroy(&q->qp.cond);
	free(q->sq);
	free(q->rq);
	free(q);
	return 0;
}

/* QPs a process never destroyed: give back their numbers and ring files
 * (a SIGKILLed process's are reclaimed by the next reg_alloc_qpn). */
__attribute__((destructor)) static void fp_cleanup(void)
{
	if (pthread_mutex_trylock(&fp_lock))
		return; /* exiting with a verbs call in flight on another thread */
	for (struct fp_qp *q = fp_qps; q; q = q->next)
		if (q->owner == getpid())
			qp_free(q);
	fp_qps = NULL;
	pthread_mutex_unlock(&fp_lock);
}

static int fp_set_qp_latency(struct ibv_qp *qp, unsigned latency_us)
{
	pthread_mutex_lock(&fp_lock);
	fqp(qp)->latency_ns = (uint64_t)latency_us * 1000;
	pthread_mutex_unlock(&fp_lock);
	return 0;
}

static int fp_set_qp_error_every(struct ibv_qp *qp, unsigned error_every)
{
	pthread_mutex_lock(&fp_lock);
	fqp(qp)->error_every = error_every;
	fqp(qp)->signaled_executed = 0; /* count from here */
	pthread_mutex_unlock(&fp_lock);
	return 0;
}

static const struct fakeprov_ops fp_ops = {
	.abi = FAKEPROV_ABI,
	.num_devices = FP_NUM_DEVICES,
	.device_name = fp_device_name,
	.device_guid = fp_device_guid,
	.alloc_context = fp_alloc_context,
	.free_context = fp_free_context,
	.query_device = fp_query_device,
	.query_port = fp_query_port,
	.query_gid = fp_query_gid,
	.alloc_pd = fp_alloc_pd,
	.dealloc_pd = fp_dealloc_pd,
	.reg_mr = fp_reg_mr,
	.reg_dmabuf_mr = fp_reg_dmabuf_mr,
	.dereg_mr = fp_dereg_mr,
	.create_comp_channel = fp_create_comp_channel,
	.destroy_comp_channel = fp_destroy_comp_channel,
	.create_cq = fp_create_cq,
	.destroy_cq = fp_destroy_cq,
	.create_qp = fp_create_qp,
	.modify_qp = fp_modify_qp,
	.query_qp = fp_query_qp,
	.destroy_qp = fp_destroy_qp,
	.post_send = fp_post_send,
	.post_recv = fp_post_recv,
	.poll_cq = fp_poll_cq,
	.req_notify_cq = fp_req_notify_cq,
	.set_qp_latency = fp_set_qp_latency,
	.set_qp_error_every = fp_set_qp_error_every,
};

__attribute__((visibility("default"))) const struct fakeprov_ops *fakeprov_init(unsigned abi)
{
	return abi == FAKEPROV_ABI ? &fp_ops : NULL;
}
