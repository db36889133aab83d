/* fakeprov.h: the private interface between the stand-in libibverbs
 * (fakeverbs.c) and its fake provider (fakeprov.c).
 *
 * For: letting libibverbs load the provider with dlopen and reach it only
 * through one exported entry, fakeprov_init(), the way rdma-core reaches
 * libmlx5: the provider's functions (post_send, poll_cq, ...) have no
 * exported symbol, libibverbs copies their addresses into the context's ops
 * table.  Not for: applications (they include <infiniband/verbs.h>), and
 * not rdma-core's real driver ABI (verbs_register_driver_34 etc.). */
#ifndef FLIGHTREC_FAKEPROV_H
#define FLIGHTREC_FAKEPROV_H

#include <infiniband/verbs.h>
#include <stdint.h>

#define FAKEPROV_ABI 34
#define FAKEPROV_FILE "libfakeprov-rdmav34.so"
#define FAKEPROV_INIT_SYMBOL "fakeprov_init"

struct fakeprov_ops {
	unsigned abi;
	int num_devices;
	const char *(*device_name)(int dev_idx);
	uint64_t (*device_guid)(int dev_idx); /* network byte order, like ibv_get_device_guid */

	/* Returns &provider_context->vctx.context: the provider allocates a
	 * struct that starts with a struct verbs_context; libibverbs fills
	 * the ops table, sz, abi_compat and the common fields. */
	struct ibv_context *(*alloc_context)(struct ibv_device *device, int dev_idx);
	void (*free_context)(struct ibv_context *context);

	int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *attr);
	int (*query_gid)(struct ibv_context *context, uint8_t port_num, int index,
			 union ibv_gid *gid);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t iova, unsigned access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, unsigned access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *context);
	int (*destroy_comp_channel)(struct ibv_comp_channel *channel);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
				    struct ibv_comp_channel *channel, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	int (*destroy_qp)(struct ibv_qp *qp);

	/* the data path: copied into ibv_context.ops */
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);

	/* fakerdma.h knobs */
	int (*set_qp_latency)(struct ibv_qp *qp, unsigned latency_us);
	int (*set_qp_error_every)(struct ibv_qp *qp, unsigned error_every);
};

typedef const struct fakeprov_ops *(*fakeprov_init_fn)(unsigned abi);

#endif
