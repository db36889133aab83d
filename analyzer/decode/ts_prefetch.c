/* Decompression ahead of the events pass, on worker threads (`--jobs N`).
 * The passes feed the models one file after the other, in file order, and
 * that order is what makes every output the same whatever N is; what can
 * run in parallel is reading and decompressing the chunks the pass will
 * ask for next.  Each worker takes the next file not yet taken, opens its
 * own reader on it (a reader is not shared between threads), reads the
 * file's noted chunks in order and queues copies of their payloads, at
 * most PF_DEPTH per file, so memory is bounded by jobs x PF_DEPTH chunks,
 * not by the length or number of files.
 *
 * A chunk the worker could not read (damaged, an I/O error, its reader
 * failed to open) is queued as "not read": the pass then reads it with the
 * file's own reader, as the serial path does, so damage is found,
 * recorded and reported exactly as without workers.  A chunk read
 * successfully changes nothing in the reader that reads it, which is why
 * reading it on another reader is invisible to everything but the clock.
 *
 * Not for decoding records or feeding models (trace_run.c, align_pass.c):
 * the workers never touch a model, the set or a file's decoded state. */
#include "trace_set_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PF_DEPTH 4

struct pf_slot {
	size_t ref;             /* index into the file's pass refs */
	int ok;                 /* 0: the pass reads it itself */
	struct frec_chunk chunk; /* data owned by the slot when ok */
};

struct pf_file {
	struct pf_slot q[PF_DEPTH];
	size_t produced, consumed;
	struct pf_slot held;    /* the chunk handed out last, freed at the next get */
	int abandoned;          /* the pass is done with the file: queue nothing more */
};

struct ts_prefetch {
	struct trace_set *ts;
	int events_only;        /* the align pass: EVENTS chunks only */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t next_file;
	int stop;
	struct pf_file *files;
	pthread_t *threads;
	size_t n_threads;
};

/* The copies are mapped, not malloc'd: they are made on one thread and
 * freed on another, and big malloc'd blocks freed that way made the
 * allocator keep the workers' memory (peak RSS grew with the jobs). */
static uint8_t *copy_alloc(size_t len)
{
	void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void copy_free(struct pf_slot *s)
{
	if (s->ok && s->chunk.data)
		munmap((void *)s->chunk.data, s->chunk.len ? s->chunk.len : 1);
	s->chunk.data = NULL;
}

static int wanted_ref(const struct ts_prefetch *pf, const struct ts_chunk_ref *ref)
{
	return !(pf->events_only && ref->late_only);
}

/* Waits for room in the file's queue, then queues s; 0, 1 when the pass
 * is done with the file (s not queued), -1 when told to stop. */
static int put(struct ts_prefetch *pf, struct pf_file *q, const struct pf_slot *s)
{
	pthread_mutex_lock(&pf->mu);
	while (!pf->stop && !q->abandoned && q->produced - q->consumed >= PF_DEPTH)
		pthread_cond_wait(&pf->cv, &pf->mu);
	int stop = pf->stop ? -1 : q->abandoned;
	if (!stop) {
		q->q[q->produced % PF_DEPTH] = *s;
		q->produced++;
		pthread_cond_broadcast(&pf->cv);
	}
	pthread_mutex_unlock(&pf->mu);
	return stop;
}

static int read_file(struct ts_prefetch *pf, size_t fi)
{
	struct trace_file *f = &pf->ts->files[fi];
	const struct ts_pass *ps = f->pass;
	struct pf_file *q = &pf->files[fi];
	struct frec_reader *r = NULL;
	struct frec_error err = { 0 };
	int fd = trace_file_fd(f);
	if (fd >= 0) {
		if (frec_open_fd(fd, f->path, &r, &err))
			r = NULL;
		close(fd);
	}
	int rc = 0;
	for (size_t i = 0; ps && i < ps->n_refs && !rc; i++) {
		if (!wanted_ref(pf, &ps->refs[i]))
			continue;
		struct pf_slot s = { .ref = i };
		struct frec_chunk c;
		if (r && frec_read_chunk_at(r, ps->refs[i].offset, &c, &err) == 1) {
			uint8_t *copy = copy_alloc(c.len);
			if (copy) {
				memcpy(copy, c.data, c.len);
				s.ok = 1;
				s.chunk = c;
				s.chunk.data = copy;
			}
		}
		rc = put(pf, q, &s);
		if (rc && s.ok)
			copy_free(&s);
	}
	frec_close(r);
	return rc < 0 ? -1 : 0; /* an abandoned file: on to the next */
}

static void *worker(void *arg)
{
	struct ts_prefetch *pf = arg;
	for (;;) {
		pthread_mutex_lock(&pf->mu);
		size_t fi = pf->stop ? pf->ts->n_files : pf->next_file++;
		pthread_mutex_unlock(&pf->mu);
		if (fi >= pf->ts->n_files || read_file(pf, fi))
			return NULL;
	}
}

struct ts_prefetch *ts_prefetch_start(struct trace_set *ts, int events_only)
{
	if (ts->jobs <= 1 || !ts->n_files)
		return NULL; /* the serial path */
	/* one file alone still gains a worker: it decompresses while the
	 * pass decodes */
	size_t jobs = ts->jobs < ts->n_files ? ts->jobs : ts->n_files;
	struct ts_prefetch *pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	pf->ts = ts;
	pf->events_only = events_only;
	pf->files = calloc(ts->n_files, sizeof(*pf->files));
	pf->threads = calloc(jobs, sizeof(*pf->threads));
	if (!pf->files || !pf->threads) {
		free(pf->files);
		free(pf->threads);
		free(pf);
		return NULL;
	}
	pthread_mutex_init(&pf->mu, NULL);
	pthread_cond_init(&pf->cv, NULL);
	for (size_t i = 0; i < jobs; i++) {
		if (pthread_create(&pf->threads[pf->n_threads], NULL, worker, pf))
			break; /* fewer workers; none: every chunk is read by the pass */
		pf->n_threads++;
	}
	if (!pf->n_threads) {
		ts_prefetch_stop(pf);
		return NULL;
	}
	return pf;
}

int ts_prefetch_get(struct ts_prefetch *pf, uint32_t file_index, size_t ref,
		    struct frec_chunk *out)
{
	if (!pf || file_index >= pf->ts->n_files)
		return 0;
	struct pf_file *q = &pf->files[file_index];
	copy_free(&q->held);
	pthread_mutex_lock(&pf->mu);
	while (q->produced == q->consumed)
		pthread_cond_wait(&pf->cv, &pf->mu);
	struct pf_slot s = q->q[q->consumed % PF_DEPTH];
	q->consumed++;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	if (s.ref != ref) { /* the pass and the worker disagree on the chunks: never expected */
		copy_free(&s);
		return 0;
	}
	if (!s.ok)
		return 0;
	q->held = s;
	*out = s.chunk;
	return 1;
}

static void drain(struct pf_file *q)
{
	copy_free(&q->held);
	for (; q->consumed < q->produced; q->consumed++)
		copy_free(&q->q[q->consumed % PF_DEPTH]);
}

void ts_prefetch_file_done(struct ts_prefetch *pf, uint32_t file_index)
{
	if (!pf || file_index >= pf->ts->n_files)
		return;
	struct pf_file *q = &pf->files[file_index];
	pthread_mutex_lock(&pf->mu);
	q->abandoned = 1;
	drain(q);
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
}

void ts_prefetch_stop(struct ts_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->mu);
	pf->stop = 1;
	pthread_cond_broadcast(&pf->cv);
	pthread_mutex_unlock(&pf->mu);
	for (size_t i = 0; i < pf->n_threads; i++)
		pthread_join(pf->threads[i], NULL);
	for (size_t fi = 0; fi < pf->ts->n_files; fi++)
		drain(&pf->files[fi]);
	pthread_mutex_destroy(&pf->mu);
	pthread_cond_destroy(&pf->cv);
	free(pf->files);
	free(pf->threads);
	free(pf);
}
