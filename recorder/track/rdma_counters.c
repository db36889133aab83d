/* RDMA port counter sampling (see rdma_counters.h). */
#include "track/rdma_counters.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"

typedef void (*counter_fn)(struct rdma_counters *rc, const char *name, uint64_t value,
			   void *ctx);

static void walk(struct rdma_counters *rc, counter_fn fn, void *ctx)
{
	char path[4096];
	DIR *devs = opendir(rc->dir);
	struct dirent *dev;

	while (devs && (dev = readdir(devs))) {
		if (dev->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/ports", rc->dir, dev->d_name);
		DIR *ports = opendir(path);
		struct dirent *port;
		while (ports && (port = readdir(ports))) {
			if (port->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/ports/%s/hw_counters", rc->dir,
				 dev->d_name, port->d_name);
			DIR *ctrs = opendir(path);
			struct dirent *c;
			while (ctrs && (c = readdir(ctrs))) {
				char file[4352], name[800];
				unsigned long long v;
				if (c->d_name[0] == '.')
					continue;
				snprintf(file, sizeof(file), "%s/%s", path, c->d_name);
				FILE *f = fopen(file, "r");
				if (!f)
					continue;
				int ok = fscanf(f, "%llu", &v) == 1;
				fclose(f);
				if (!ok)
					continue;
				snprintf(name, sizeof(name), "%s/%s/%s", dev->d_name, port->d_name,
					 c->d_name);
				fn(rc, name, v, ctx);
			}
			if (ctrs)
				closedir(ctrs);
		}
		if (ports)
			closedir(ports);
	}
	if (devs)
		closedir(devs);
}

static void count_one(struct rdma_counters *rc, const char *name, uint64_t v, void *ctx)
{
	(void)v;
	(void)ctx;
	if (rc->n < RDMA_MAX_COUNTERS)
		snprintf(rc->names[rc->n++], sizeof(rc->names[0]), "%s", name);
}

int rdma_counters_open(struct rdma_counters *rc, const char *dir)
{
	memset(rc, 0, sizeof(*rc));
	rc->dir = dir;
	walk(rc, count_one, NULL);
	return rc->n ? 0 : -1;
}

struct sample_ctx {
	struct fr_rdma_counter *out;
	uint32_t n;
};

static void sample_one(struct rdma_counters *rc, const char *name, uint64_t v, void *ctx)
{
	struct sample_ctx *s = ctx;
	for (size_t i = 0; i < rc->n; i++) {
		if (strcmp(rc->names[i], name))
			continue;
		struct fr_rdma_counter *c = &s->out[s->n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->name, sizeof(c->name), "%s", name);
		/* a counter that went backwards was reset: count from zero */
		c->delta = v >= rc->last[i] ? v - rc->last[i] : v;
		rc->last[i] = v;
		return;
	}
}

void rdma_counters_sample(struct rdma_counters *rc, struct frec_builder *b)
{
	struct timespec ts;
	struct sample_ctx s = {0};
	uint64_t now;

	if (!rc->n)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	s.out = calloc(rc->n, sizeof(*s.out));
	if (!s.out)
		return;
	walk(rc, sample_one, &s);
	/* the first reading only sets the baseline */
	if (rc->primed && s.n) {
		uint32_t size = sizeof(struct fr_rec_rdma_counters) + s.n * sizeof(*s.out);
		struct fr_rec_rdma_counters *r = frec_builder_reserve(b, size);
		if (r) {
			memset(r, 0, sizeof(*r));
			r->h.size = size;
			r->h.type = FR_REC_RDMA_COUNTERS;
			r->ts_ns = now;
			r->interval_ns = now - rc->last_ns;
			r->n = s.n;
			memcpy(r + 1, s.out, s.n * sizeof(*s.out));
			frec_builder_commit(b, now);
		}
	}
	rc->primed = 1;
	rc->last_ns = now;
	free(s.out);
}
