/* The analyzer's decode pipeline as the fuzz targets that feed it a whole
 * trace run it (fuzz_analyzer, fuzz_records): see fuzz_pipeline.h. */
#include "fuzz_pipeline.h"

#include "model.h"
#include "symbolize.h"
#include "trace_set.h"

#include <stdlib.h>
#include <string.h>

uint64_t fuzz_pipeline(const char *path)
{
	const char *paths[1] = { path };
	struct trace_set *ts = NULL;
	struct frec_error err = { .offset = -1 };
	uint64_t sum = 0;
	if (trace_set_open(paths, 1, &ts, &err)) {
		if (ts)
			trace_set_free(ts);
		return 0;
	}
	struct model_opts opts = { 0 };
	for (size_t i = 0; analyzer_models[i]; i++)
		if (!trace_set_use_model(ts, analyzer_models[i]->name, &opts))
			goto out;
	if (trace_set_run(ts, &err))
		goto out;
	struct symbolizer *sym = trace_set_symbolizer(ts, &err);
	if (!sym)
		goto out;
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t fi = 0; fi < trace_set_count(ts); fi++) {
		const struct trace_file *f = trace_set_file(ts, fi);
		char buf[256];
		sum += strlen(trace_file_trouble(f, buf, sizeof(buf)));
		for (size_t s = 0; s < f->n_stacks; s++) {
			const struct ts_stack *st = &f->stacks[s];
			size_t n = (size_t)st->n_kernel + st->n_user;
			if (n > cap) {
				const char **grown = realloc(frames, n * sizeof(*grown));
				if (!grown)
					break;
				frames = grown;
				cap = n;
			}
			symbolize_stack(sym, f, (uint32_t)fi, st, frames);
			for (size_t k = 0; k < n; k++)
				if (frames[k])
					sum += strlen(frames[k]);
		}
	}
	free(frames);
out:
	trace_set_free(ts);
	return sum;
}
