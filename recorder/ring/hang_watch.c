/* The asynchronous hang watch (see hang_watch.h): a fixed open-addressing
 * table keyed by (pid, event handle), updated from event records, queries
 * and synchronizes in the order the drain commits them.  The ring buffer
 * is one queue for every CPU, and a thread's events enter it in program
 * order, so a record and the queries after it arrive in that order.
 * Removal (a process that exits, or room needed) rebuilds the table: rare,
 * and it keeps probing simple. */
#include "ring/hang_watch.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const struct hang_watch *hw, uint32_t pid, uint64_t event)
{
	uint64_t h = (event ^ ((uint64_t)pid << 32 | pid)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (hw->cap - 1);
}

static struct hang_watch_entry *find(struct hang_watch *hw, uint32_t pid, uint64_t event)
{
	for (size_t i = slot_of(hw, pid, event), n = 0; n < hw->cap; i = (i + 1) & (hw->cap - 1), n++) {
		struct hang_watch_entry *e = &hw->slots[i];
		if (!e->pid)
			return NULL;
		if (e->pid == pid && e->event == event)
			return e;
	}
	return NULL;
}

/* Keeps the entries keep() accepts, probing them in afresh. */
static void rebuild(struct hang_watch *hw, int (*keep)(const struct hang_watch_entry *, uint32_t),
		    uint32_t arg)
{
	size_t kept = 0;
	/* compact in place, copy out, then probe each back in */
	for (size_t i = 0; i < hw->cap; i++) {
		struct hang_watch_entry e = hw->slots[i];
		if (e.pid && keep(&e, arg))
			hw->slots[kept++] = e;
	}
	struct hang_watch_entry *old = malloc(kept ? kept * sizeof(*old) : 1);
	if (!old) {
		/* no memory to rehash: start empty rather than probe a broken table */
		memset(hw->slots, 0, hw->cap * sizeof(*hw->slots));
		hw->untracked += kept;
		hw->used = 0;
		return;
	}
	memcpy(old, hw->slots, kept * sizeof(*old));
	memset(hw->slots, 0, hw->cap * sizeof(*hw->slots));
	for (size_t k = 0; k < kept; k++) {
		size_t i = slot_of(hw, old[k].pid, old[k].event);
		while (hw->slots[i].pid)
			i = (i + 1) & (hw->cap - 1);
		hw->slots[i] = old[k];
	}
	hw->used = kept;
	free(old);
}

static int other_pid(const struct hang_watch_entry *e, uint32_t pid)
{
	return e->pid != pid;
}

static int still_waiting(const struct hang_watch_entry *e, uint32_t unused)
{
	(void)unused;
	return e->not_ready_since != 0;
}

/* The entry of (pid, event), created when missing; NULL when there is no
 * room even after dropping the events that are not waiting. */
static struct hang_watch_entry *get(struct hang_watch *hw, uint32_t pid, uint64_t event)
{
	struct hang_watch_entry *e = find(hw, pid, event);
	if (e)
		return e;
	if (4 * (hw->used + 1) > 3 * hw->cap) {
		rebuild(hw, still_waiting, 0);
		if (4 * (hw->used + 1) > 3 * hw->cap) {
			hw->untracked++;
			return NULL;
		}
	}
	size_t i = slot_of(hw, pid, event);
	while (hw->slots[i].pid)
		i = (i + 1) & (hw->cap - 1);
	e = &hw->slots[i];
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->event = event;
	hw->used++;
	return e;
}

int hang_watch_init(struct hang_watch *hw, size_t max_events)
{
	memset(hw, 0, sizeof(*hw));
	size_t cap = 16;
	while (cap < max_events + max_events / 3 + 1)
		cap *= 2;
	hw->slots = calloc(cap, sizeof(*hw->slots));
	if (!hw->slots)
		return -1;
	hw->cap = cap;
	pthread_mutex_init(&hw->lock, NULL);
	return 0;
}

void hang_watch_destroy(struct hang_watch *hw)
{
	if (!hw->slots)
		return;
	pthread_mutex_destroy(&hw->lock);
	free(hw->slots);
	hw->slots = NULL;
}

enum what { RECORD, QUERY, SYNC };

void hang_watch_event(struct hang_watch *hw, const struct fr_ev_common *ev)
{
	uint16_t type = ev->h.type;
	if (type == FR_EV_PROC_EXIT || type == FR_EV_PROC_EXEC) {
		/* its events are gone (exec replaces the program): forget them */
		pthread_mutex_lock(&hw->lock);
		rebuild(hw, other_pid, ev->pid);
		pthread_mutex_unlock(&hw->lock);
		return;
	}
	if (type != FR_EV_CUDA || ev->h.size < sizeof(struct fr_ev_cuda))
		return;
	const struct fr_ev_cuda *c = (const struct fr_ev_cuda *)ev;
	enum what what;
	switch (c->func) {
	case FR_CUDA_EVENT_RECORD: case FR_CU_EVENT_RECORD:
		if (c->result != 0)
			return;
		what = RECORD;
		break;
	case FR_CUDA_EVENT_QUERY: case FR_CU_EVENT_QUERY:
		what = QUERY;
		break;
	case FR_CUDA_EVENT_SYNC: case FR_CU_EVENT_SYNC:
		if (c->result != 0)
			return;
		what = SYNC;
		break;
	default:
		return;
	}
	pthread_mutex_lock(&hw->lock);
	struct hang_watch_entry *e;
	if (what == RECORD) {
		/* kept so a later query knows its stream; events nobody waits
		 * on make room when the table fills (get) */
		if ((e = get(hw, c->c.pid, c->ptr))) {
			e->recorded_ns = c->c.ts_ns;
			e->stream = c->stream;
			e->not_ready_since = 0;
		}
	} else if (what == QUERY && c->result == HANG_WATCH_NOT_READY) {
		if ((e = get(hw, c->c.pid, c->ptr))) {
			if (!e->not_ready_since)
				e->not_ready_since = c->c.ts_ns;
			e->last_query_ns = c->c.ts_ns;
			e->tid = c->c.tid;
		}
	} else if (what == SYNC || c->result == 0) {
		if ((e = find(hw, c->c.pid, c->ptr)))
			e->not_ready_since = 0; /* seen complete */
	}
	pthread_mutex_unlock(&hw->lock);
}

uint64_t hang_watch_stuck_since(struct hang_watch *hw, uint64_t now_ns,
				uint64_t polled_within_ns, struct hang_watch_stuck *who)
{
	uint64_t oldest = 0;
	pthread_mutex_lock(&hw->lock);
	for (size_t i = 0; i < hw->cap; i++) {
		const struct hang_watch_entry *e = &hw->slots[i];
		if (!e->pid || !e->not_ready_since)
			continue;
		if (polled_within_ns && now_ns > e->last_query_ns &&
		    now_ns - e->last_query_ns > polled_within_ns)
			continue;
		if (oldest && e->not_ready_since >= oldest)
			continue;
		oldest = e->not_ready_since;
		if (who)
			*who = (struct hang_watch_stuck){
				.pid = e->pid, .tid = e->tid, .event = e->event, .stream = e->stream,
				.since_ns = e->not_ready_since, .recorded_ns = e->recorded_ns,
				.last_query_ns = e->last_query_ns,
			};
	}
	pthread_mutex_unlock(&hw->lock);
	return oldest;
}
