/* Sparse raw stacks (see ustack_sparse.h).
 *
 * One unwinder (uw_process) per recent process, made from its mappings
 * that have an image.  Mappings keep arriving while a process loads its
 * libraries, and remaking the unwinder drops its cached step rules, so an
 * unwinder is remade only when a copy fails to unwind and something new
 * (a mapping or an image) has arrived since it was made.  An unwind that
 * reached the outermost frame never touched a newer mapping: it would have
 * stopped at a pc outside every module. */
#include "symbols/ustack_sparse.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

#define SPARSE_PROCS 16

struct sparse_image {
	uint32_t dso_id;
	uint8_t *bytes;
	size_t len;
};

struct sparse_proc {
	uint32_t pid;
	struct uw_process *uw; /* NULL: slot free */
	size_t maps_seen, images_seen;
	size_t maps_scanned;   /* the table's maps looked at for a new one of pid */
	uint64_t used;         /* for eviction: larger is more recent */
};

struct ustack_sparse {
	struct dso_table *dsos;
	pthread_mutex_t lock;  /* images: added by the tracking thread */
	struct sparse_image *images;
	size_t n_images, cap_images;
	/* the drain thread's */
	struct sparse_proc procs[SPARSE_PROCS];
	uint64_t clock;
	uint8_t *read_map;
	size_t read_map_cap;
	struct uw_module *mods;
	size_t cap_mods;
	struct uw_frame frames[UW_MAX_FRAMES];
	struct ustack_sparse_stats stats;
};

struct ustack_sparse *ustack_sparse_new(struct dso_table *dsos)
{
	struct ustack_sparse *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dsos = dsos;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void ustack_sparse_free(struct ustack_sparse *s)
{
	if (!s)
		return;
	for (int i = 0; i < SPARSE_PROCS; i++)
		uw_process_free(s->procs[i].uw);
	for (size_t i = 0; i < s->n_images; i++)
		free(s->images[i].bytes);
	free(s->images);
	free(s->read_map);
	free(s->mods);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int add_owned(struct ustack_sparse *s, uint32_t dso_id, uint8_t *bytes, size_t len)
{
	pthread_mutex_lock(&s->lock);
	if (s->n_images == s->cap_images) {
		size_t cap = s->cap_images ? 2 * s->cap_images : 64;
		struct sparse_image *grown = realloc(s->images, cap * sizeof(*grown));
		if (!grown) {
			pthread_mutex_unlock(&s->lock);
			free(bytes);
			return -1;
		}
		s->images = grown;
		s->cap_images = cap;
	}
	s->images[s->n_images++] = (struct sparse_image){ dso_id, bytes, len };
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ustack_sparse_add_image(struct ustack_sparse *s, uint32_t dso_id, uint8_t *image,
			    size_t len)
{
	return add_owned(s, dso_id, image, len);
}

/* Under s->lock.  Images are only appended and never freed before s: the
 * modules keep pointing at their bytes while the array grows. */
static const struct sparse_image *find_image(struct ustack_sparse *s, uint32_t dso_id,
					     size_t n_images)
{
	for (size_t i = n_images; i-- > 0;)
		if (s->images[i].dso_id == dso_id)
			return &s->images[i];
	return NULL;
}

/* pid's unwinder from its mappings with an image, in table order (a later
 * mapping wins an overlap, as in the analyzer).  0, or -1. */
static int build(struct ustack_sparse *s, struct sparse_proc *pr, uint32_t pid)
{
	size_t n = 0;
	/* images, then the mappings: the tracking thread adds an image holding
	 * neither lock */
	pthread_mutex_lock(&s->lock);
	size_t n_images = s->n_images;
	pthread_mutex_lock(&s->dsos->lock);
	size_t n_maps = s->dsos->n_maps;
	for (size_t i = 0; i < n_maps; i++) {
		const struct mapping *m = &s->dsos->maps[i];
		if (m->pid != pid || !m->dso_id)
			continue;
		const struct sparse_image *im = find_image(s, m->dso_id, n_images);
		if (!im)
			continue;
		if (n == s->cap_mods) {
			size_t cap = s->cap_mods ? 2 * s->cap_mods : 256;
			struct uw_module *grown = realloc(s->mods, cap * sizeof(*grown));
			if (!grown) {
				pthread_mutex_unlock(&s->dsos->lock);
				pthread_mutex_unlock(&s->lock);
				return -1;
			}
			s->mods = grown;
			s->cap_mods = cap;
		}
		s->mods[n++] = (struct uw_module){ m->start, m->end, m->pgoff, im->bytes, im->len,
						   NULL };
	}
	pthread_mutex_unlock(&s->dsos->lock);
	pthread_mutex_unlock(&s->lock);
	char why[160];
	uw_process_free(pr->uw);
	pr->uw = uw_process_new(pid, s->mods, n, NULL, why, sizeof(why));
	pr->pid = pid;
	pr->maps_seen = n_maps;
	pr->maps_scanned = n_maps;
	pr->images_seen = n_images;
	s->stats.rebuilds++;
	return pr->uw ? 0 : -1;
}

static struct sparse_proc *proc_of(struct ustack_sparse *s, uint32_t pid)
{
	struct sparse_proc *oldest = &s->procs[0];
	for (int i = 0; i < SPARSE_PROCS; i++) {
		struct sparse_proc *pr = &s->procs[i];
		if (pr->uw && pr->pid == pid) {
			pr->used = ++s->clock;
			return pr;
		}
		if (!pr->uw || pr->used < oldest->used)
			oldest = pr;
	}
	oldest->used = ++s->clock;
	return build(s, oldest, pid) ? NULL : oldest;
}

/* Something arrived since pr's unwinder was made. */
static bool stale(struct ustack_sparse *s, const struct sparse_proc *pr)
{
	pthread_mutex_lock(&s->lock);
	size_t n_images = s->n_images;
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->dsos->lock);
	size_t n_maps = s->dsos->n_maps;
	pthread_mutex_unlock(&s->dsos->lock);
	return n_images != pr->images_seen || n_maps != pr->maps_seen;
}

/* pid mapped something since pr's unwinder was made: a library mapped
 * where another was unmapped would otherwise keep being unwound with the
 * old one's tables while its copies still unwind (the analyzer takes the
 * later mapping).  The table only grows: each map is looked at once. */
static bool new_mapping_of(struct ustack_sparse *s, struct sparse_proc *pr, uint32_t pid)
{
	bool found = false;
	pthread_mutex_lock(&s->dsos->lock);
	size_t n_maps = s->dsos->n_maps;
	for (size_t i = pr->maps_scanned; i < n_maps && !found; i++)
		found = s->dsos->maps[i].pid == pid;
	pthread_mutex_unlock(&s->dsos->lock);
	if (!found)
		pr->maps_scanned = n_maps;
	return found;
}

static bool unwind(struct ustack_sparse *s, struct sparse_proc *pr, uint32_t tid,
		   const uint64_t regs[FR_USTACK_REGS], const uint8_t *stack, uint32_t stack_len,
		   uint32_t *regs_used, enum uw_end *end, int *end_by_cfi, bool *ran_off)
{
	struct uw_use use = { .read_map = s->read_map };
	uw_unwind_traced(pr->uw, tid, regs, stack, stack_len, &use, s->frames, UW_MAX_FRAMES,
			 end);
	*regs_used = use.regs_used;
	*end_by_cfi = use.end_by_cfi;
	*ran_off = use.ran_off;
	return use.complete;
}

/* The copy cut after its last byte read: a 16 KiB copy is mostly unread
 * past its few frames, so this is scanned a word at a time (byte by byte it
 * cost three times the unwind itself). */
/* Bytes a bounded copy takes past the last byte an unwind read: the
 * outermost frame's own CFI reads nothing above its return address, and
 * the margin covers a rule reaching a word or two further. */
#define USTACK_TOP_MARGIN 64

static uint32_t kept_len(const uint8_t *map, uint32_t len)
{
	while (len % 8 && !map[len - 1])
		len--;
	if (len % 8)
		return len;
	while (len >= 32) {
		uint64_t w[4];
		memcpy(w, map + len - 32, sizeof(w));
		if (w[0] | w[1] | w[2] | w[3])
			break;
		len -= 32;
	}
	while (len && !map[len - 1])
		len--;
	return len;
}

bool ustack_sparse_plan(struct ustack_sparse *s, uint32_t pid, uint32_t tid,
			const uint64_t regs[FR_USTACK_REGS], const uint8_t *stack,
			uint32_t stack_len, uint32_t *keep_len, const uint8_t **keep,
			uint32_t *regs_used, uint64_t *top, bool *ran_off)
{
	enum uw_end end = UW_END_STOPPED;
	*top = 0;
	*ran_off = false;
	s->stats.bytes_in += stack_len;
	if (!s->read_map || stack_len > s->read_map_cap) { /* never NULL, even for 0 bytes */
		size_t cap = stack_len ? stack_len : 1;
		uint8_t *grown = realloc(s->read_map, cap);
		if (!grown)
			goto whole;
		s->read_map = grown;
		s->read_map_cap = cap;
	}
	struct sparse_proc *pr = proc_of(s, pid);
	if (!pr || (new_mapping_of(s, pr, pid) && build(s, pr, pid)))
		goto whole;
	int by_cfi = 0;
	bool done = unwind(s, pr, tid, regs, stack, stack_len, regs_used, &end, &by_cfi, ran_off);
	if (!done && stale(s, pr)) {
		if (build(s, pr, pid))
			goto whole;
		done = unwind(s, pr, tid, regs, stack, stack_len, regs_used, &end, &by_cfi, ran_off);
	}
	if (!done)
		goto whole;
	uint32_t len = kept_len(s->read_map, stack_len);
	/* the outermost frame reached inside the copy: nothing above the last
	 * byte read belongs to any later stack of this thread either.  Only
	 * where the CFI says so: a walk that read a zero return address may
	 * have read a stale word (registers caught mid-breakpoint, a
	 * function's tables wrong), and its top would cut every later copy */
	if (end == UW_END_OUTERMOST && by_cfi && len)
		*top = regs[7] + len + USTACK_TOP_MARGIN;
	*keep_len = len;
	*keep = s->read_map;
	s->stats.sparse++;
	s->stats.bytes_kept += len;
	return true;
whole:
	s->stats.whole++;
	s->stats.bytes_kept += stack_len;
	return false;
}

struct ustack_sparse_stats ustack_sparse_stats(const struct ustack_sparse *s)
{
	return s->stats;
}
