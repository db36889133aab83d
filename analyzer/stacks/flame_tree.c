/* The flame tree: merges stacks into a tree of frames and writes the folded
 * text format.  It is the one place stacks are counted, so every flame output
 * (folded, svg, html, the report) agrees on the numbers.
 *
 * Not for: symbolizing, choosing which samples to count, or drawing (that is
 * flame_render.c).
 *
 * Memory grows with distinct stack prefixes and distinct names, never with
 * the number of samples: a repeated stack only adds to existing counters.
 * flame_tree_add is the hot path (millions of calls per trace), so a child is
 * found by hashing (parent, name) rather than walking a sibling list that
 * can be 100k entries wide under a dispatcher frame.  Sibling order is
 * restored lazily (sorted by name the first time someone reads the tree after
 * a change) because keeping lists sorted on insert would make wide nodes
 * quadratic. */
#include "flame_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROOT_NAME "all"
#define NAME_CHUNK_BYTES (64 * 1024)
#define NO_NAME "[unknown]"

/* Names live in chunks that never move, so flame_node.name stays valid for
 * the life of the tree. */
struct name_chunk {
	struct name_chunk *next;
	size_t used, cap;
	char bytes[];
};

struct flame_tree {
	struct flame_node *nodes;
	uint64_t *node_hash; /* parallel to nodes: name hash, half the child key */
	size_t n_nodes, cap_nodes;

	/* child index: open addressing; a slot holds the node index in its low
	 * half and 32 more bits of the key's hash in its high half, so a probe
	 * rejects a wrong slot without touching the node arrays (cache misses
	 * there dominate add).  0 = empty: the root is never anyone's child. */
	uint64_t *child_slots;
	size_t child_mask;

	/* interned names: slot holds name id + 1, 0 = empty */
	const char **names;
	uint64_t *name_hash;
	uint32_t *name_len;
	size_t n_names, cap_names;
	uint32_t *name_slots;
	size_t name_mask;
	struct name_chunk *chunks;

	int unsorted; /* children added since the last sort */
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Word-at-a-time with one multiply per word and a full mix at the end:
 * every frame of every sample is hashed, so this is the hot loop.  Only
 * used for in-memory tables, never stored, so it can change freely. */
static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (len * 0x100000001b3ULL);
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	uint64_t tail = 0;
	memcpy(&tail, s + i, len - i);
	h = (h ^ tail) * 0xc4ceb9fe1a85ec53ULL;
	return mix64(h);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r = a + b;
	return r < a ? UINT64_MAX : r;
}

static const char *arena_copy(struct flame_tree *t, const char *s, size_t len)
{
	struct name_chunk *c = t->chunks;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > NAME_CHUNK_BYTES ? len + 1 : NAME_CHUNK_BYTES;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = t->chunks;
		c->used = 0;
		c->cap = cap;
		t->chunks = c;
	}
	char *dst = c->bytes + c->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	c->used += len + 1;
	return dst;
}

static int name_rehash(struct flame_tree *t, size_t new_slots)
{
	uint32_t *slots = calloc(new_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	size_t mask = new_slots - 1;
	for (size_t id = 0; id < t->n_names; id++) {
		size_t i = (size_t)t->name_hash[id] & mask;
		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = (uint32_t)id + 1;
	}
	free(t->name_slots);
	t->name_slots = slots;
	t->name_mask = mask;
	return 0;
}

/* Returns the name id, or -errno.  h is hash_bytes(s, len). */
static int64_t intern(struct flame_tree *t, const char *s, size_t len, uint64_t h)
{
	size_t i = (size_t)h & t->name_mask;
	for (uint32_t slot; (slot = t->name_slots[i]) != 0; i = (i + 1) & t->name_mask) {
		uint32_t id = slot - 1;
		if (t->name_hash[id] == h && t->name_len[id] == len &&
		    memcmp(t->names[id], s, len) == 0)
			return id;
	}
	if (t->n_names >= UINT32_MAX - 1)
		return -E2BIG;
	if (t->n_names == t->cap_names) {
		size_t cap = t->cap_names * 2;
		const char **names = realloc(t->names, cap * sizeof(*names));
		if (!names)
			return -ENOMEM;
		t->names = names;
		uint64_t *hashes = realloc(t->name_hash, cap * sizeof(*hashes));
		if (!hashes)
			return -ENOMEM;
		t->name_hash = hashes;
		uint32_t *lens = realloc(t->name_len, cap * sizeof(*lens));
		if (!lens)
			return -ENOMEM;
		t->name_len = lens;
		t->cap_names = cap;
	}
	/* grow before inserting so the table is never full (a full table
	 * would make the probe loop above spin forever) */
	if ((t->n_names + 1) * 2 > t->name_mask + 1) {
		int rc = name_rehash(t, (t->name_mask + 1) * 2);
		if (rc)
			return rc;
		i = (size_t)h & t->name_mask;
		while (t->name_slots[i])
			i = (i + 1) & t->name_mask;
	}
	const char *copy = arena_copy(t, s, len);
	if (!copy)
		return -ENOMEM;
	uint32_t id = (uint32_t)t->n_names++;
	t->names[id] = copy;
	t->name_hash[id] = h;
	t->name_len[id] = (uint32_t)len;
	t->name_slots[i] = id + 1;
	return id;
}

/* Keyed by the name's hash rather than its interned id so that finding an
 * existing child (the common case: most samples repeat known stacks) costs
 * one probe, not a name-table probe and then a child-table probe. */
static uint64_t child_key(uint32_t parent, uint64_t name_hash)
{
	return mix64(name_hash ^ ((uint64_t)parent * 0x9e3779b97f4a7c15ULL));
}

static uint64_t child_slot(uint64_t key, uint32_t node)
{
	return (key & 0xffffffff00000000ULL) | node;
}

static int child_rehash(struct flame_tree *t, size_t new_slots)
{
	uint64_t *slots = calloc(new_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	size_t mask = new_slots - 1;
	for (size_t n = 1; n < t->n_nodes; n++) {
		uint64_t key = child_key(t->nodes[n].parent, t->node_hash[n]);
		size_t i = (size_t)key & mask;
		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = child_slot(key, (uint32_t)n);
	}
	free(t->child_slots);
	t->child_slots = slots;
	t->child_mask = mask;
	return 0;
}

static int grow_nodes(struct flame_tree *t)
{
	if (t->cap_nodes >= UINT32_MAX / 2)
		return -E2BIG;
	size_t cap = t->cap_nodes * 2;
	struct flame_node *nodes = realloc(t->nodes, cap * sizeof(*nodes));
	if (!nodes)
		return -ENOMEM;
	t->nodes = nodes;
	uint64_t *hashes = realloc(t->node_hash, cap * sizeof(*hashes));
	if (!hashes)
		return -ENOMEM;
	t->node_hash = hashes;
	t->cap_nodes = cap;
	return 0;
}

/* Returns the child of parent named name (hash h), or 0 (0 is the root,
 * never a child). */
static uint32_t find_child(const struct flame_tree *t, uint32_t parent,
			   const char *name, uint64_t h)
{
	uint64_t key = child_key(parent, h);
	uint64_t tag = key & 0xffffffff00000000ULL;
	size_t i = (size_t)key & t->child_mask;
	for (uint64_t slot; (slot = t->child_slots[i]) != 0; i = (i + 1) & t->child_mask) {
		if ((slot & 0xffffffff00000000ULL) != tag)
			continue;
		uint32_t n = (uint32_t)slot;
		if (t->nodes[n].parent == parent && strcmp(t->nodes[n].name, name) == 0)
			return n;
	}
	return 0;
}

/* Creates the child (known to be absent); returns its index, or 0 with
 * *err set. */
static uint32_t add_child(struct flame_tree *t, uint32_t parent, uint32_t name_id,
			  uint64_t h, int *err)
{
	if (t->n_nodes == t->cap_nodes) {
		int rc = grow_nodes(t);
		if (rc) {
			*err = rc;
			return 0;
		}
	}
	if (t->n_nodes * 2 > t->child_mask + 1) { /* n_nodes - 1 children + this one */
		int rc = child_rehash(t, (t->child_mask + 1) * 2);
		if (rc) {
			*err = rc;
			return 0;
		}
	}
	uint64_t key = child_key(parent, h);
	size_t i = (size_t)key & t->child_mask;
	while (t->child_slots[i])
		i = (i + 1) & t->child_mask;
	uint32_t n = (uint32_t)t->n_nodes++;
	struct flame_node *node = &t->nodes[n];
	struct flame_node *p = &t->nodes[parent];
	node->name = t->names[name_id];
	node->total = 0;
	node->self = 0;
	node->parent = parent;
	node->first_child = 0;
	/* prepend: O(1) now, name order is restored by sort_children() */
	node->next_sibling = p->first_child;
	node->depth = p->depth + 1;
	p->first_child = n;
	t->node_hash[n] = h;
	t->child_slots[i] = child_slot(key, n);
	t->unsorted = 1;
	return n;
}

struct flame_tree *flame_tree_new(void)
{
	struct flame_tree *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->cap_nodes = 1024;
	t->nodes = malloc(t->cap_nodes * sizeof(*t->nodes));
	t->node_hash = malloc(t->cap_nodes * sizeof(*t->node_hash));
	t->cap_names = 1024;
	t->names = malloc(t->cap_names * sizeof(*t->names));
	t->name_hash = malloc(t->cap_names * sizeof(*t->name_hash));
	t->name_len = malloc(t->cap_names * sizeof(*t->name_len));
	t->child_mask = 4096 - 1;
	t->child_slots = calloc(t->child_mask + 1, sizeof(*t->child_slots));
	t->name_mask = 4096 - 1;
	t->name_slots = calloc(t->name_mask + 1, sizeof(*t->name_slots));
	if (!t->nodes || !t->node_hash || !t->names || !t->name_hash ||
	    !t->name_len || !t->child_slots || !t->name_slots) {
		flame_tree_free(t);
		return NULL;
	}
	int64_t root_name = intern(t, ROOT_NAME, strlen(ROOT_NAME),
				   hash_bytes(ROOT_NAME, strlen(ROOT_NAME)));
	if (root_name < 0) {
		flame_tree_free(t);
		return NULL;
	}
	t->nodes[0] = (struct flame_node){ .name = t->names[root_name] };
	t->node_hash[0] = t->name_hash[root_name];
	t->n_nodes = 1;
	return t;
}

void flame_tree_free(struct flame_tree *t)
{
	if (!t)
		return;
	for (struct name_chunk *c = t->chunks, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->nodes);
	free(t->node_hash);
	free(t->child_slots);
	free(t->names);
	free(t->name_hash);
	free(t->name_len);
	free(t->name_slots);
	free(t);
}

/* Returns 0 or -errno (-ENOMEM, -E2BIG past 4G nodes, -EINVAL).  A stack of
 * zero frames counts toward the root only (it has no frame to print in
 * folded output).  A NULL frame name is taken as "[unknown]" rather than
 * dropping the sample, so totals still add up. */
int flame_tree_add(struct flame_tree *t, const char *const *frames, size_t n,
		   uint64_t value)
{
	if (!t || (n && !frames))
		return -EINVAL;
	/* Find or create the whole path first and add values after, so a
	 * failure part-way leaves the counters consistent (an empty new node
	 * has total 0 and is skipped by every writer). */
	uint32_t cur = 0;
	for (size_t i = 0; i < n; i++) {
		const char *name = frames[i] ? frames[i] : NO_NAME;
		size_t len = strlen(name);
		if (len >= UINT32_MAX)
			return -E2BIG; /* a 4 GiB symbol is corruption */
		uint64_t h = hash_bytes(name, len);
		uint32_t child = find_child(t, cur, name, h);
		if (!child) {
			int64_t id = intern(t, name, len, h);
			if (id < 0)
				return (int)id;
			int err = 0;
			child = add_child(t, cur, (uint32_t)id, h, &err);
			if (!child)
				return err;
		}
		cur = child;
	}
	t->nodes[cur].self = sat_add(t->nodes[cur].self, value);
	for (uint32_t i = cur;; i = t->nodes[i].parent) {
		t->nodes[i].total = sat_add(t->nodes[i].total, value);
		if (i == 0)
			break;
	}
	return 0;
}

struct sort_ent {
	const char *name;
	uint32_t parent;
	uint32_t node;
};

static int cmp_sort_ent(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;
	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->name, y->name); /* siblings never share a name */
}

/* Relinks every sibling list in name (byte) order.  If memory is short the
 * lists stay in insertion order, which is still deterministic for a given
 * input. */
static void sort_children(struct flame_tree *t)
{
	if (!t->unsorted)
		return;
	size_t n = t->n_nodes - 1;
	struct sort_ent *ents = n ? malloc(n * sizeof(*ents)) : NULL;
	if (n && !ents)
		return;
	for (size_t i = 0; i < n; i++) {
		uint32_t node = (uint32_t)(i + 1);
		ents[i].name = t->nodes[node].name;
		ents[i].parent = t->nodes[node].parent;
		ents[i].node = node;
	}
	qsort(ents, n, sizeof(*ents), cmp_sort_ent);
	for (size_t i = 0; i < t->n_nodes; i++)
		t->nodes[i].first_child = 0;
	/* walk backwards so each prepend leaves the list ascending */
	for (size_t i = n; i-- > 0;) {
		struct flame_node *p = &t->nodes[ents[i].parent];
		t->nodes[ents[i].node].next_sibling = p->first_child;
		p->first_child = ents[i].node;
	}
	free(ents);
	t->unsorted = 0;
}

size_t flame_tree_count(const struct flame_tree *t)
{
	return t ? t->n_nodes : 0;
}

/* Reading a node is what makes sibling order observable, so the deferred
 * sort happens here.  The tree is always allocated mutable by
 * flame_tree_new, so dropping const is well defined; it does mean two
 * threads must not read a freshly changed tree at once. */
const struct flame_node *flame_tree_node(const struct flame_tree *t, uint32_t i)
{
	if (!t || i >= t->n_nodes)
		return NULL;
	sort_children((struct flame_tree *)t);
	return &t->nodes[i];
}

uint64_t flame_tree_total(const struct flame_tree *t)
{
	return t ? t->nodes[0].total : 0;
}

/* Folded lines are "a;b;c 42": a name holding ';' would split into two
 * frames and a newline would start a bogus line, so in folded output only
 * ';' becomes ':' and '\n' / '\r' become ' '.  Spaces are left alone:
 * readers split the value off at the last space. */
static size_t append_folded_name(char **buf, size_t *cap, size_t len, const char *name)
{
	size_t nlen = strlen(name);
	if (len + nlen + 2 > *cap) {
		size_t cap2 = *cap ? *cap : 256;
		while (len + nlen + 2 > cap2)
			cap2 *= 2;
		char *b = realloc(*buf, cap2);
		if (!b)
			return SIZE_MAX;
		*buf = b;
		*cap = cap2;
	}
	char *dst = *buf + len;
	for (size_t i = 0; i < nlen; i++) {
		char c = name[i];
		dst[i] = c == ';' ? ':' : (c == '\n' || c == '\r') ? ' ' : c;
	}
	return len + nlen;
}

/* Returns 0, -ENOMEM or -EIO (write failed). */
int flame_write_folded(const struct flame_tree *t, FILE *out)
{
	if (!t || !out)
		return -EINVAL;
	sort_children((struct flame_tree *)t);
	const struct flame_node *nodes = t->nodes;
	size_t max_depth = 0;
	for (size_t i = 0; i < t->n_nodes; i++)
		if (nodes[i].depth > max_depth)
			max_depth = nodes[i].depth;
	/* path_len[d]: length of the joined path through depth d */
	size_t *path_len = malloc((max_depth + 1) * sizeof(*path_len));
	char *buf = NULL;
	size_t cap = 0;
	int rc = 0;
	if (!path_len)
		return -ENOMEM;
	path_len[0] = 0;

	/* iterative pre-order walk: stacks from hostile traces can be deep */
	uint32_t i = nodes[0].first_child;
	while (i) {
		const struct flame_node *n = &nodes[i];
		size_t start = path_len[n->depth - 1];
		if (n->depth > 1)
			buf[start++] = ';';
		size_t len = append_folded_name(&buf, &cap, start, n->name);
		if (len == SIZE_MAX) {
			rc = -ENOMEM;
			break;
		}
		path_len[n->depth] = len;
		if (n->self > 0) {
			fwrite(buf, 1, len, out);
			fprintf(out, " %llu\n", (unsigned long long)n->self);
		}
		if (n->first_child) {
			i = n->first_child;
			continue;
		}
		while (i && !nodes[i].next_sibling)
			i = nodes[i].parent;
		if (i)
			i = nodes[i].next_sibling;
	}
	free(path_len);
	free(buf);
	if (!rc && ferror(out))
		rc = -EIO;
	return rc;
}
