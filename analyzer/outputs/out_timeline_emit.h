/* How the timeline writer (out_timeline.c) puts its events into a file:
 * Chrome trace JSON (out_timeline_json.c) or Perfetto's protobuf trace
 * (out_perfetto.c).  The writer decides what goes on the timeline
 * (filters, nesting, steps, counters, names); an emitter only encodes it.
 * Times are ns from the origin; pid and tid are the writer's track ids
 * (file and pid packed, out_timeline.c: jpid), tid with a high bit for a
 * process's "steps", "GPU idle" and GPU stream tracks; args is a JSON object's inside
 * ("\"result\":0,\"device\":1", "" for none).  Private to the timeline
 * writer's files. */
#ifndef FLIGHTREC_OUT_TIMELINE_EMIT_H
#define FLIGHTREC_OUT_TIMELINE_EMIT_H

#include <stdint.h>
#include <stdio.h>

/* tid bits of a process's own tracks (not threads) */
#define TL_STEPS_TID_BIT ((uint64_t)1 << 31)
#define TL_IDLE_TID_BIT ((uint64_t)1 << 32)
/* a process's GPU stream: the bit, device << 24, the stream's CUPTI id */
#define TL_GPU_TID_BIT ((uint64_t)1 << 33)
#define TL_GPU_TID(device, stream) \
	(TL_GPU_TID_BIT | (uint64_t)((device) & 0xff) << 24 | ((stream) & 0xffffff))

struct tl_emit {
	/* a slice that nests with its thread's others */
	void (*slice)(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
		      int64_t start, int64_t dur, const char *args);
	/* one end of an asynchronous slice, matched by (cat, id); args NULL at
	 * an end that has none */
	void (*async)(void *e, int begin, const char *cat, const char *name, const char *id,
		      uint64_t pid, uint64_t tid, int64_t ts, const char *args);
	void (*instant)(void *e, const char *cat, const char *name, uint64_t pid, uint64_t tid,
			int64_t ts, const char *args);
	/* a counter of process pid called name is bytes from ts on */
	void (*counter)(void *e, const char *name, uint64_t pid, int64_t ts, uint64_t bytes);
	/* names and order: process_name, process_labels, process_sort_index,
	 * thread_name, thread_sort_index (value, or number when is_number) */
	void (*meta)(void *e, const char *what, uint64_t pid, uint64_t tid, const char *key,
		     const char *value, int64_t number, int is_number);
	/* the document's tail and a flush: 0, or -1 with errno when writing failed */
	int (*end)(void *e);
	void (*free)(void *e);
};

/* The JSON emitter and the Perfetto one, writing to out (NULL: out of
 * memory). */
void *tl_json_new(FILE *out, const struct tl_emit **ops);
void *tl_perfetto_new(FILE *out, const struct tl_emit **ops);

#endif
