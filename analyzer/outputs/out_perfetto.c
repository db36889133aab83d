/* The timeline as Perfetto's protobuf trace (see out_timeline_emit.h): a
 * perfetto.protos.Trace written a TracePacket at a time (each packet is
 * field 1 of Trace, so the file is a concatenation of them and nothing is
 * held back).  Field numbers are those of Perfetto's public protos
 * (protos/perfetto/trace/trace_packet.proto, track_event/track_event.proto,
 * track_descriptor.proto, process_descriptor.proto, thread_descriptor.proto,
 * counter_descriptor.proto, debug_annotation.proto); the subset used is in
 * tests/perfetto/perfetto_trace.proto.
 *
 * Tracks (uuids 1, 2, ... in order of first use): one per process
 * (ProcessDescriptor), one per thread
 * (ThreadDescriptor, its parent the process's), the process's "steps" and
 * "GPU idle" tracks and each counter as named child tracks of the process,
 * and a track per asynchronous slice (Perfetto's way for slices that may
 * overlap; the UI shows tracks of one name together).  A track's
 * descriptor goes out before its first event and again, named, with the
 * metadata at the end (a later descriptor of a uuid renames it).  Slices
 * are SLICE_BEGIN/SLICE_END pairs, instants INSTANT, memory COUNTER values
 * in bytes; a slice's args go as one debug annotation "args" holding the
 * JSON object the JSON timeline has (legacy_json_value).  Event names and
 * categories are interned (interned_data, interned_data.proto): a name's
 * first packet defines its iid and later ones carry the iid alone, so a
 * long run's repeated CUDA and system call names go into the file once. */
#include "out_timeline_emit.h"
#include "hmap.h"
#include "pb_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* trace_packet.proto */
enum { PKT_TIMESTAMP = 8, PKT_SEQUENCE_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
       PKT_SEQUENCE_FLAGS = 13, PKT_TRACK_DESCRIPTOR = 60 };
/* interned_data.proto: EventCategory and EventName are both { iid, name } */
enum { ID_CATEGORIES = 1, ID_NAMES = 2, IN_IID = 1, IN_NAME = 2 };
/* track_descriptor.proto and the descriptors it holds */
enum { TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8 };
enum { PD_PID = 1, PD_NAME = 6 };
enum { THD_PID = 1, THD_TID = 2, THD_NAME = 5 };
enum { CD_UNIT = 3, UNIT_SIZE_BYTES = 3 };
/* track_event.proto */
enum { TE_CATEGORY_IIDS = 3, TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK = 11, TE_CATEGORIES = 22, TE_NAME = 23,
       TE_COUNTER_VALUE = 30 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
/* debug_annotation.proto */
enum { DA_NAME = 10, DA_LEGACY_JSON = 9 };

#define SEQUENCE_ID 1
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2

struct tl_perfetto {
	FILE *out;
	struct pb_buf pkt, sub, sub2;
	struct pb_buf interned, entry; /* the packet's interned_data, one entry */
	char *json;         /* an event's "{args}", reused: one allocation, not one an event */
	size_t json_cap;
	struct hmap seen;   /* track key (process_key...) -> its uuid, once its descriptor is out */
	uint64_t next_uuid; /* uuids are small numbers: every event names its track */
	struct hmap iids;   /* (hash of the string, ID_NAMES or ID_CATEGORIES) -> iid */
	char **strs;        /* iid - 1 -> its string: a hash that collides is not interned */
	size_t nstrs, cap;
	int first;          /* the sequence's first packet not written yet */
	int failed;         /* memory ran out: the file is not written */
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_str(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

/* Track keys, kinds kept apart; each track's uuid is the next small number
 * (1 on: 0 is Perfetto's "no track"), a byte or two in every event where a
 * hash would take ten. */
static uint64_t process_key(uint64_t pid)
{
	return mix(pid * 4 + 1) | 1;
}

static uint64_t thread_key(uint64_t pid, uint64_t tid)
{
	return mix(mix(pid) ^ (tid * 4 + 2)) | 1;
}

static uint64_t named_key(uint64_t pid, const char *kind, const char *name)
{
	return mix(hash_str(hash_str(mix(pid * 4 + 3), kind), name)) | 1;
}

/* pkt as field 1 of Trace: tag, length, bytes */
static void put_packet(struct tl_perfetto *p)
{
	if (p->pkt.failed || p->sub.failed || p->sub2.failed || p->interned.failed ||
	    p->entry.failed) {
		p->failed = 1;
		return;
	}
	uint8_t head[11];
	size_t n = 0;
	uint64_t len = p->pkt.len;
	head[n++] = 0x0a;
	while (len >= 0x80) {
		head[n++] = (uint8_t)(len | 0x80);
		len >>= 7;
	}
	head[n++] = (uint8_t)len;
	fwrite(head, 1, n, p->out);
	fwrite(p->pkt.data, 1, p->pkt.len, p->out);
}

/* A packet's common fields: the sequence, and the flag on its first. */
static void packet_begin(struct tl_perfetto *p, int64_t ts, int timed)
{
	pb_reset(&p->pkt);
	if (timed)
		pb_uint_set(&p->pkt, PKT_TIMESTAMP, ts > 0 ? (uint64_t)ts : 0);
	pb_uint(&p->pkt, PKT_SEQUENCE_ID, SEQUENCE_ID);
	pb_uint(&p->pkt, PKT_SEQUENCE_FLAGS,
		SEQ_NEEDS_INCREMENTAL_STATE | (p->first ? SEQ_INCREMENTAL_STATE_CLEARED : 0));
	p->first = 0;
	pb_reset(&p->interned);
}

/* s's iid among kind (ID_NAMES, ID_CATEGORIES), defined in this packet's
 * interned_data when new; 0 (write s itself) when its hash is another
 * string's or memory ran out.  iids are never 0 (Perfetto's "none"). */
static uint64_t intern(struct tl_perfetto *p, int kind, const char *s)
{
	int created = 0;
	uint64_t *v = hmap_slot(&p->iids, hash_str(0xcbf29ce484222325ull, s), (uint64_t)kind,
				&created);
	if (!v)
		return 0;
	if (!created)
		return *v && !strcmp(p->strs[*v - 1], s) ? *v : 0;
	if (p->nstrs == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		char **strs = realloc(p->strs, cap * sizeof(*strs));
		if (!strs)
			return 0; /* *v stays 0: never interned */
		p->strs = strs;
		p->cap = cap;
	}
	char *copy = strdup(s);
	if (!copy)
		return 0;
	p->strs[p->nstrs++] = copy;
	*v = p->nstrs;
	pb_reset(&p->entry);
	pb_uint(&p->entry, IN_IID, *v);
	pb_string(&p->entry, IN_NAME, s);
	pb_msg(&p->interned, (uint32_t)kind, &p->entry);
	return *v;
}

/* A TrackDescriptor: of a process (parent 0: tid 0, kind NULL), of a
 * thread, or a named child track of a process (kind "steps", "idle",
 * "counter", "async"). */
static void descriptor(struct tl_perfetto *p, uint64_t uuid, uint64_t parent, uint64_t pid,
		       uint64_t tid, const char *kind, const char *name)
{
	packet_begin(p, 0, 0);
	pb_reset(&p->sub);
	pb_uint_set(&p->sub, TD_UUID, uuid);
	if (name && kind)
		pb_string(&p->sub, TD_NAME, name);
	pb_reset(&p->sub2);
	if (!kind && !tid) {
		pb_uint_set(&p->sub2, PD_PID, pid);
		if (name)
			pb_string(&p->sub2, PD_NAME, name);
		pb_msg(&p->sub, TD_PROCESS, &p->sub2);
	} else if (!kind) {
		pb_uint(&p->sub, TD_PARENT, parent);
		pb_uint_set(&p->sub2, THD_PID, pid);
		pb_uint_set(&p->sub2, THD_TID, tid);
		if (name)
			pb_string(&p->sub2, THD_NAME, name);
		pb_msg(&p->sub, TD_THREAD, &p->sub2);
	} else {
		pb_uint(&p->sub, TD_PARENT, parent);
		if (!strcmp(kind, "counter")) {
			pb_uint(&p->sub2, CD_UNIT, UNIT_SIZE_BYTES);
			pb_msg(&p->sub, TD_COUNTER, &p->sub2);
		}
	}
	pb_msg(&p->pkt, PKT_TRACK_DESCRIPTOR, &p->sub);
	put_packet(p);
}

/* The uuid of key's track, its descriptor and its process's written once
 * each (0: memory ran out, and the file fails). */
static uint64_t ensure(struct tl_perfetto *p, uint64_t key, uint64_t pid, uint64_t tid,
		       const char *kind, const char *name)
{
	int created = 0;
	uint64_t *v = hmap_slot(&p->seen, process_key(pid), 0, &created);
	if (!v) {
		p->failed = 1;
		return 0;
	}
	if (created) {
		*v = ++p->next_uuid;
		descriptor(p, *v, 0, pid, 0, NULL, NULL);
	}
	uint64_t proc = *v;
	if (key == process_key(pid))
		return proc;
	v = hmap_slot(&p->seen, key, 0, &created);
	if (!v) {
		p->failed = 1;
		return 0;
	}
	if (created) {
		*v = ++p->next_uuid;
		descriptor(p, *v, proc, pid, tid, kind, name);
	}
	return *v;
}

/* The track of (pid, tid): a thread's, or the process's steps / GPU idle. */
static uint64_t thread_track(struct tl_perfetto *p, uint64_t pid, uint64_t tid)
{
	if (tid & TL_GPU_TID_BIT) {
		char name[48];
		snprintf(name, sizeof(name), "GPU %u stream %u", (unsigned)(tid >> 24 & 0xff),
			 (unsigned)(tid & 0xffffff));
		return ensure(p, named_key(pid, "gpu", name), pid, tid, "gpu", name);
	}
	const char *kind = tid & TL_IDLE_TID_BIT ? "idle" : tid & TL_STEPS_TID_BIT ? "steps" : NULL;
	uint64_t key = kind ? named_key(pid, kind, "") : thread_key(pid, tid);
	return ensure(p, key, pid, tid, kind, kind ? (kind[0] == 'i' ? "GPU idle" : "steps") : NULL);
}

static void track_event(struct tl_perfetto *p, int64_t ts, uint64_t track, int type,
			const char *cat, const char *name, const char *args)
{
	packet_begin(p, ts, 1);
	pb_reset(&p->sub);
	pb_uint(&p->sub, TE_TYPE, (uint64_t)type);
	pb_uint(&p->sub, TE_TRACK, track);
	if (cat) {
		uint64_t iid = intern(p, ID_CATEGORIES, cat);
		if (iid)
			pb_uint(&p->sub, TE_CATEGORY_IIDS, iid);
		else
			pb_string(&p->sub, TE_CATEGORIES, cat);
	}
	if (name) {
		uint64_t iid = intern(p, ID_NAMES, name);
		if (iid)
			pb_uint(&p->sub, TE_NAME_IID, iid);
		else
			pb_string(&p->sub, TE_NAME, name);
	}
	if (args && args[0]) {
		pb_reset(&p->sub2);
		pb_string(&p->sub2, DA_NAME, "args");
		size_t n = strlen(args);
		if (n + 2 > p->json_cap) {
			char *grown = realloc(p->json, n + 2);
			if (!grown) {
				p->failed = 1;
				return;
			}
			p->json = grown;
			p->json_cap = n + 2;
		}
		p->json[0] = '{';
		memcpy(p->json + 1, args, n);
		p->json[n + 1] = '}';
		pb_bytes(&p->sub2, DA_LEGACY_JSON, p->json, n + 2);
		pb_msg(&p->sub, TE_DEBUG, &p->sub2);
	}
	pb_msg(&p->pkt, PKT_TRACK_EVENT, &p->sub);
	if (p->interned.len)
		pb_msg(&p->pkt, PKT_INTERNED, &p->interned);
	put_packet(p);
}

static void pf_slice(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
		     int64_t start, int64_t dur, const char *args)
{
	struct tl_perfetto *p = e;
	uint64_t track = thread_track(p, pid, tid);
	track_event(p, start, track, TYPE_SLICE_BEGIN, cat, name, args);
	track_event(p, start + dur, track, TYPE_SLICE_END, NULL, NULL, NULL);
}

static void pf_async(void *e, int begin, const char *cat, const char *name, const char *id,
		     uint64_t pid, uint64_t tid, int64_t ts, const char *args)
{
	struct tl_perfetto *p = e;
	char key[160];
	snprintf(key, sizeof(key), "%s/%s", cat, id);
	uint64_t track = ensure(p, named_key(pid, "async", key), pid, tid, "async", name);
	if (begin)
		track_event(p, ts, track, TYPE_SLICE_BEGIN, cat, name, args);
	else /* an end's args (a completion's status) join the slice's */
		track_event(p, ts, track, TYPE_SLICE_END, NULL, NULL, args);
}

static void pf_instant(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
		       int64_t ts, const char *args)
{
	struct tl_perfetto *p = e;
	track_event(p, ts, thread_track(p, pid, tid), TYPE_INSTANT, cat, name, args);
}

static void pf_counter(void *e, const char *name, uint64_t pid, int64_t ts, uint64_t bytes)
{
	struct tl_perfetto *p = e;
	uint64_t track = ensure(p, named_key(pid, "counter", name), pid, 0, "counter", name);
	packet_begin(p, ts, 1);
	pb_reset(&p->sub);
	pb_uint(&p->sub, TE_TYPE, TYPE_COUNTER);
	pb_uint(&p->sub, TE_TRACK, track);
	pb_uint_set(&p->sub, TE_COUNTER_VALUE, bytes);
	pb_msg(&p->pkt, PKT_TRACK_EVENT, &p->sub);
	put_packet(p);
}

static void pf_meta(void *e, const char *what, uint64_t pid, uint64_t tid, const char *key,
		    const char *value, int64_t number, int is_number)
{
	struct tl_perfetto *p = e;
	(void)key;
	(void)number;
	if (is_number || !value)
		return; /* sort indexes: the UI orders tracks itself */
	if (!strcmp(what, "process_name")) {
		uint64_t proc = ensure(p, process_key(pid), pid, 0, NULL, NULL);
		descriptor(p, proc, 0, pid, 0, NULL, value);
	} else if (!strcmp(what, "thread_name")) {
		if (tid & (TL_IDLE_TID_BIT | TL_STEPS_TID_BIT | TL_GPU_TID_BIT))
			return; /* named when made */
		uint64_t track = thread_track(p, pid, tid);
		descriptor(p, track, ensure(p, process_key(pid), pid, 0, NULL, NULL), pid, tid,
			   NULL, value);
	}
}

static int pf_end(void *e)
{
	struct tl_perfetto *p = e;
	if (p->failed) {
		errno = ENOMEM;
		return -1;
	}
	if (fflush(p->out) || ferror(p->out)) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return 0;
}

static void pf_free(void *e)
{
	struct tl_perfetto *p = e;
	pb_free(&p->pkt);
	pb_free(&p->sub);
	pb_free(&p->sub2);
	pb_free(&p->interned);
	pb_free(&p->entry);
	free(p->json);
	hmap_free(&p->seen);
	hmap_free(&p->iids);
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	free(p->strs);
	free(p);
}

static const struct tl_emit perfetto_ops = {
	.slice = pf_slice, .async = pf_async, .instant = pf_instant,
	.counter = pf_counter, .meta = pf_meta, .end = pf_end, .free = pf_free,
};

void *tl_perfetto_new(FILE *out, const struct tl_emit **ops)
{
	struct tl_perfetto *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->out = out;
	p->first = 1;
	hmap_init(&p->seen);
	hmap_init(&p->iids);
	*ops = &perfetto_ops;
	return p;
}
