/* Joining the two ends of the RDMA model's connections, after the replay:
 * each connection row learns which row (in any file) is the queue pair it
 * talks to.  Not for building the rows (rdma_replay.c).
 *
 * X's remote end is the row Y with Y.qp_num == X.remote_qp and Y.remote_qp
 * == X.qp_num, in any file; when several match (QP numbers are per device
 * and repeat across nodes), the GIDs decide: the trace does not hold a
 * QP's own GID, but every join teaches one (the GID X dialled belongs to
 * Y's node), and a GID belongs to one node, so a candidate whose node is
 * known not to own the GID X dialled (or the reverse) is dropped; joins go
 * in rounds until nothing changes, and rows still matching several are
 * counted as ambiguous and left unjoined (GID 0: the LID stands in).  Two
 * QPs in one process are two rows, each its own view. */
#include "rdma_private.h"

#include <stdlib.h>
#include <string.h>

/* The remote port X dialled at RTR: its GID, or its LID on an InfiniBand
 * fabric without GRH (GID all zero). */
static uint64_t remote_addr(const struct rdma_conn *x)
{
	static const uint8_t zero[16];
	if (!memcmp(x->remote_gid, zero, sizeof(zero)))
		return 0x10000u | x->dlid;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ x->remote_gid[i]) * 0x100000001b3ull;
	return h | 0x100000u; /* never a LID's value */
}

/* X's candidates: rows Y with Y.qp_num == X.remote_qp and Y.remote_qp ==
 * X.qp_num, through the chain built in rdma_join(). */
struct join_index {
	struct hmap first;   /* (qp_num, remote_qp) -> 1 + first row */
	size_t *next;        /* per row: 1 + next row with the same key, 0 ends */
	struct hmap owner;   /* (remote_addr, 0) -> 1 + file that owns that GID (or LID),
				OWNER_CONFLICT when joins disagree */
};
#define OWNER_CONFLICT UINT64_MAX

/* False when what the joins so far learned contradicts X <-> Y: a GID
 * belongs to one node, so X's remote GID must not be another file's, nor
 * Y's remote GID another file than X's. */
static int addr_ok(const struct join_index *ix, const struct rdma_conn *x,
		   const struct rdma_conn *y)
{
	uint64_t v;
	if (x->has_rtr && hmap_get(&ix->owner, remote_addr(x), 0, &v) && v != OWNER_CONFLICT &&
	    v != (uint64_t)y->local.file + 1)
		return 0;
	if (y->has_rtr && hmap_get(&ix->owner, remote_addr(y), 0, &v) && v != OWNER_CONFLICT &&
	    v != (uint64_t)x->local.file + 1)
		return 0;
	return 1;
}

#define PICK_NONE SIZE_MAX
#define PICK_AMBIGUOUS (SIZE_MAX - 1)

/* The one row X joins, PICK_NONE or PICK_AMBIGUOUS. */
static size_t join_pick(const struct model_rdma *m, const struct join_index *ix, size_t xi)
{
	const struct rdma_conn *x = &m->acc[xi].c;
	uint64_t head;
	if (!x->remote_qp_known || !hmap_get(&ix->first, x->remote_qp, x->qp_num, &head))
		return PICK_NONE;
	size_t found = PICK_NONE, n = 0;
	for (size_t yi = (size_t)head; yi; yi = ix->next[yi - 1]) {
		if (!addr_ok(ix, x, &m->acc[yi - 1].c))
			continue;
		found = yi - 1;
		n++;
	}
	return n <= 1 ? found : PICK_AMBIGUOUS;
}

static int learn_owner(struct join_index *ix, const struct rdma_conn *x, uint32_t file)
{
	if (!x->has_rtr)
		return 0;
	int created;
	uint64_t *v = hmap_slot(&ix->owner, remote_addr(x), 0, &created);
	if (!v)
		return -1;
	if (created)
		*v = (uint64_t)file + 1;
	else if (*v != (uint64_t)file + 1)
		*v = OWNER_CONFLICT;
	return 0;
}

static void set_remote(struct model_rdma *m, size_t xi, size_t yi)
{
	struct rdma_conn *x = &m->acc[xi].c;
	x->joined = 1;
	x->remote_conn = yi;
	x->remote = m->acc[yi].c.local;
}

/* Joins in rounds: a round's joins teach which file owns which GID, which
 * may settle rows that matched several candidates by QP numbers alone. */
int rdma_join(struct model_rdma *m)
{
	struct join_index ix = { .next = calloc(m->n_acc ? m->n_acc : 1, sizeof(size_t)) };
	size_t *pick = calloc(m->n_acc ? m->n_acc : 1, sizeof(size_t));
	int rc = -1;
	hmap_init(&ix.first);
	hmap_init(&ix.owner);
	if (!ix.next || !pick)
		goto out;
	for (size_t i = m->n_acc; i-- > 0;) { /* chains in row order */
		const struct rdma_conn *c = &m->acc[i].c;
		pick[i] = PICK_AMBIGUOUS; /* not settled yet */
		if (!c->remote_qp_known)
			continue;
		uint64_t *slot = hmap_slot(&ix.first, c->qp_num, c->remote_qp, NULL);
		if (!slot)
			goto out;
		ix.next[i] = (size_t)*slot;
		*slot = i + 1;
	}
	for (int progress = 1; progress;) {
		progress = 0;
		for (size_t i = 0; i < m->n_acc; i++) {
			if (pick[i] != PICK_AMBIGUOUS)
				continue;
			pick[i] = join_pick(m, &ix, i);
			if (pick[i] == PICK_AMBIGUOUS)
				continue;
			progress = 1;
			if (pick[i] != PICK_NONE &&
			    (learn_owner(&ix, &m->acc[i].c, m->acc[pick[i]].c.local.file) ||
			     learn_owner(&ix, &m->acc[pick[i]].c, m->acc[i].c.local.file)))
				goto out;
		}
	}
	for (size_t i = 0; i < m->n_acc; i++) {
		if (pick[i] == PICK_AMBIGUOUS)
			m->result.ambiguous_joins++;
		else if (pick[i] != PICK_NONE)
			set_remote(m, i, pick[i]);
	}
	rc = 0;
out:
	free(ix.next);
	free(pick);
	hmap_free(&ix.first);
	hmap_free(&ix.owner);
	return rc;
}
