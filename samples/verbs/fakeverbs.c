/* fakeverbs.c: a stand-in for rdma-core's libibverbs.so.1, built against the
 * real <infiniband/verbs.h>.
 *
 * For: running flightrec's RDMA probes on machines without an RDMA NIC.
 * Like the real library it exports the verbs control path (with the same
 * symbol version nodes, IBVERBS_1.0 compat + IBVERBS_1.1 default for the old
 * calls), loads a provider with dlopen (FAKEPROV_FILE, next to this library,
 * or $FLIGHTREC_FAKE_RDMA_PROVIDER) when the device list is first read, and
 * copies the provider's unexported post_send / post_recv / poll_cq into
 * ibv_context.ops, so the header's static inline ibv_post_send /
 * ibv_post_recv / ibv_poll_cq dispatch into the provider exactly as they do
 * into libmlx5.  Contexts are struct verbs_context (abi_compat ==
 * __VERBS_ABI_IS_EXTENDED), so the header's ___ibv_query_port takes the
 * extended path too.
 *
 * Not for: talking to hardware or the kernel (there is no uverbs fd), nor a
 * complete libibverbs: only what samples/rdma_pingpong.c and the tests use.
 * The ABI 1.0 compat versions exist for their symbol shape only and fail
 * with ENOSYS.  The semantics of the fake devices live in fakeprov.c. */
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakeprov.h"
#include "fakerdma.h"

/* The header turns these names into macros around inline helpers; the
 * library defines the real functions behind them. */
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

struct fv_device {
	struct ibv_device dev;
	int idx;
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct fakeprov_ops *prov;
static struct fv_device *devices;
static int num_devices;

static void load_provider(void)
{
	char path[PATH_MAX];
	const char *env = getenv("FLIGHTREC_FAKE_RDMA_PROVIDER");
	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		Dl_info self;
		if (!dladdr((void *)load_provider, &self) || !self.dli_fname) {
			fprintf(stderr, "libibverbs (flightrec stand-in): cannot find own file to locate %s\n",
				FAKEPROV_FILE);
			return;
		}
		snprintf(path, sizeof(path), "%s", self.dli_fname);
		char *slash = strrchr(path, '/');
		size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
		snprintf(path + dir_len, sizeof(path) - dir_len, "%s", FAKEPROV_FILE);
	}
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "libibverbs (flightrec stand-in): cannot load provider %s: %s; "
			"set FLIGHTREC_FAKE_RDMA_PROVIDER=PATH\n", path, dlerror());
		return;
	}
	fakeprov_init_fn init;
	*(void **)&init = dlsym(handle, FAKEPROV_INIT_SYMBOL);
	const struct fakeprov_ops *ops = init ? init(FAKEPROV_ABI) : NULL;
	if (!ops || ops->abi != FAKEPROV_ABI) {
		fprintf(stderr, "libibverbs (flightrec stand-in): %s: no %s for ABI %d\n", path,
			FAKEPROV_INIT_SYMBOL, FAKEPROV_ABI);
		return;
	}
	devices = calloc((size_t)ops->num_devices, sizeof(*devices));
	if (!devices)
		return;
	for (int i = 0; i < ops->num_devices; i++) {
		struct ibv_device *d = &devices[i].dev;
		devices[i].idx = i;
		d->node_type = IBV_NODE_CA;
		d->transport_type = IBV_TRANSPORT_IB;
		snprintf(d->name, sizeof(d->name), "%s", ops->device_name(i));
		snprintf(d->dev_name, sizeof(d->dev_name), "uverbs%d", i);
		snprintf(d->dev_path, sizeof(d->dev_path), "/sys/class/infiniband_verbs/uverbs%d", i);
		snprintf(d->ibdev_path, sizeof(d->ibdev_path), "/sys/class/infiniband/%s", d->name);
	}
	num_devices = ops->num_devices;
	prov = ops;
}

static int provider_ready(void)
{
	pthread_once(&load_once, load_provider);
	if (!prov) {
		errno = ENOSYS;
		return 0;
	}
	return 1;
}

static struct fv_device *fv_dev(struct ibv_device *device)
{
	for (int i = 0; i < num_devices; i++)
		if (device == &devices[i].dev)
			return &devices[i];
	return NULL;
}

/* ---- devices --------------------------------------------------------- */

struct ibv_device **ibv_get_device_list(int *num)
{
	if (num)
		*num = 0;
	int n = provider_ready() ? num_devices : 0;
	struct ibv_device **list = calloc((size_t)n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (int i = 0; i < n; i++)
		list[i] = &devices[i].dev;
	if (num)
		*num = n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct fv_device *d = fv_dev(device);
	return d ? prov->device_guid(d->idx) : 0;
}

int ibv_get_device_index(struct ibv_device *device)
{
	struct fv_device *d = fv_dev(device);
	return d ? d->idx : -1;
}

/* The extended query_port the header's ___ibv_query_port calls through
 * verbs_context.query_port. */
static int fv_query_port_ex(struct ibv_context *context, uint8_t port_num,
			    struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr full;
	memset(&full, 0, sizeof(full));
	int rc = prov->query_port(context, port_num, &full);
	if (rc)
		return rc;
	memcpy(port_attr, &full, port_attr_len < sizeof(full) ? port_attr_len : sizeof(full));
	return 0;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!provider_ready())
		return NULL;
	struct fv_device *d = fv_dev(device);
	if (!d) {
		errno = ENODEV;
		return NULL;
	}
	struct ibv_context *ctx = prov->alloc_context(device, d->idx);
	if (!ctx)
		return NULL;
	struct verbs_context *vctx =
		(struct verbs_context *)((char *)ctx - offsetof(struct verbs_context, context));
	vctx->sz = sizeof(*vctx);
	vctx->query_port = fv_query_port_ex;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = -1;
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	/* verbs_set_ops(): the provider's data path into the public table */
	ctx->ops.post_send = prov->post_send;
	ctx->ops.post_recv = prov->post_recv;
	ctx->ops.poll_cq = prov->poll_cq;
	ctx->ops.req_notify_cq = prov->req_notify_cq;
	return ctx;
}

int ibv_close_device(struct ibv_context *context)
{
	pthread_mutex_destroy(&context->mutex);
	prov->free_context(context);
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	return prov->query_device(context, device_attr);
}

/* The old entry point: struct _compat_ibv_port_attr is struct ibv_port_attr
 * without the trailing flags / port_cap_flags2. */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return fv_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, flags));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	return prov->query_gid(context, port_num, index, gid);
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0)
		return EINVAL;
	*pkey = htobe16(0xffff);
	return 0;
}

/* ---- protection domains, memory regions ------------------------------- */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	return prov->alloc_pd(context);
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return prov->dealloc_pd(pd);
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return prov->reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return prov->reg_mr(pd, addr, length, iova, (unsigned)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return prov->reg_mr(pd, addr, length, iova, access);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
				 uint64_t iova, int fd, int access)
{
	return prov->reg_dmabuf_mr(pd, offset, length, iova, fd, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	return prov->dereg_mr(mr);
}

/* ---- completion queues ------------------------------------------------- */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	return prov->create_comp_channel(context);
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return prov->destroy_comp_channel(channel);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	return prov->create_cq(context, cqe, cq_context, channel, comp_vector);
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	return prov->destroy_cq(cq);
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- queue pairs ------------------------------------------------------- */

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	return prov->create_qp(pd, qp_init_attr);
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	return prov->modify_qp(qp, attr, attr_mask);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	return prov->query_qp(qp, attr, attr_mask, init_attr);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	return prov->destroy_qp(qp);
}

/* ---- misc -------------------------------------------------------------- */

int ibv_fork_init(void)
{
	return 0; /* nothing is pinned, fork is always safe */
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};
	if ((unsigned)status < sizeof(str) / sizeof(str[0]) && str[status])
		return str[status];
	return "unknown";
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const str[] = {"no state change (NOP)", "down", "init", "armed",
					  "active", "active deferred"};
	if ((unsigned)port_state < sizeof(str) / sizeof(str[0]))
		return str[port_state];
	return "unknown";
}

/* ---- fakerdma.h knobs --------------------------------------------------- */

int fakerdma_set_qp_latency(struct ibv_qp *qp, unsigned latency_us)
{
	return prov ? prov->set_qp_latency(qp, latency_us) : EINVAL;
}

int fakerdma_set_qp_error_every(struct ibv_qp *qp, unsigned error_every)
{
	return prov ? prov->set_qp_error_every(qp, error_every) : EINVAL;
}

/* ---- ABI 1.0 compat versions --------------------------------------------
 * The real library keeps the pre-1.1 entry points (which take ABI 1.0
 * object layouts) as NAME@IBVERBS_1.0 next to the default NAME@@IBVERBS_1.1.
 * These reproduce that symbol shape; nothing links against them, and they
 * fail with ENOSYS.  The library is built with -fno-ipa-icf so that these
 * identical bodies keep distinct addresses (one symbol per address, as in
 * the real file). */
/* Parameters do not matter to a stub that fails at once.  NAME@@@ makes the
 * function above the default version (and drops its unversioned alias, which
 * the version script would otherwise also give IBVERBS_1.0). */
#define FV_COMPAT(ret, name, fail)                                                             \
	__asm__(".symver " #name ", " #name "@@@IBVERBS_1.1");                                 \
	ret name##_1_0(void);                                                                  \
	__asm__(".symver " #name "_1_0, " #name "@IBVERBS_1.0");                               \
	ret name##_1_0(void)                                                                   \
	{                                                                                      \
		errno = ENOSYS;                                                                \
		return fail;                                                                   \
	}

FV_COMPAT(void *, ibv_get_device_list, NULL)
FV_COMPAT(int, ibv_free_device_list, -1)
FV_COMPAT(void *, ibv_get_device_name, NULL)
FV_COMPAT(__be64, ibv_get_device_guid, 0)
FV_COMPAT(void *, ibv_open_device, NULL)
FV_COMPAT(int, ibv_close_device, ENOSYS)
FV_COMPAT(int, ibv_query_device, ENOSYS)
FV_COMPAT(int, ibv_query_port, ENOSYS)
FV_COMPAT(int, ibv_query_gid, ENOSYS)
FV_COMPAT(int, ibv_query_pkey, ENOSYS)
FV_COMPAT(void *, ibv_alloc_pd, NULL)
FV_COMPAT(int, ibv_dealloc_pd, ENOSYS)
FV_COMPAT(void *, ibv_reg_mr, NULL)
FV_COMPAT(int, ibv_dereg_mr, ENOSYS)
FV_COMPAT(void *, ibv_create_cq, NULL)
FV_COMPAT(int, ibv_destroy_cq, ENOSYS)
FV_COMPAT(int, ibv_ack_cq_events, ENOSYS)
FV_COMPAT(void *, ibv_create_qp, NULL)
FV_COMPAT(int, ibv_query_qp, ENOSYS)
FV_COMPAT(int, ibv_modify_qp, ENOSYS)
FV_COMPAT(int, ibv_destroy_qp, ENOSYS)
