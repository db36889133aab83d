/* The report's "syscalls" section: the system calls that took the most
 * time, merged over all files.  Not for counting them (model_syscalls.c). */
#include "out_report_sections.h"
#include "model_syscalls.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define TOP_SYSCALLS 20

static int sc_by_total(const void *a, const void *b)
{
	const struct syscall_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->nr < y->nr ? -1 : x->nr > y->nr;
}

int report_section_syscalls(FILE *f, struct trace_set *ts, const void *model)
{
	fputs("\"syscalls\":", f);
	if (!model) {
		fputs("null", f);
		return 0;
	}
	/* merged over files */
	struct syscall_stat *all = calloc(SYSCALLS_MAX_NR + 1, sizeof(*all));
	struct syscall_stat *top = calloc(SYSCALLS_MAX_NR + 1, sizeof(*top));
	if (!all || !top) {
		free(all);
		free(top);
		return -ENOMEM;
	}
	for (uint32_t nr = 0; nr <= SYSCALLS_MAX_NR; nr++)
		all[nr].nr = nr;
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		size_t n = model_syscalls_top(model, (uint32_t)i, top, SYSCALLS_MAX_NR + 1);
		for (size_t k = 0; k < n; k++) {
			struct syscall_stat *s = &all[top[k].nr <= SYSCALLS_MAX_NR ? top[k].nr : SYSCALLS_MAX_NR];
			s->count += top[k].count;
			s->total_ns += top[k].total_ns;
			s->failed += top[k].failed;
			if (top[k].max_ns > s->max_ns)
				s->max_ns = top[k].max_ns;
		}
	}
	qsort(all, SYSCALLS_MAX_NR + 1, sizeof(*all), sc_by_total);
	uint64_t calls = 0;
	for (uint32_t k = 0; k <= SYSCALLS_MAX_NR; k++)
		calls += all[k].count;
	if (!calls) {
		fputs("null", f);
	} else {
		fprintf(f, "{\"calls\":%" PRIu64 ",\"top\":[", calls);
		for (uint32_t k = 0; k < TOP_SYSCALLS && all[k].count; k++) {
			const char *name = all[k].nr < SYSCALLS_MAX_NR ? syscall_name(all[k].nr) : NULL;
			char buf[32];
			if (!name) {
				snprintf(buf, sizeof(buf), all[k].nr < SYSCALLS_MAX_NR ? "syscall_%u" : "(nr >= %u)",
					 all[k].nr);
				name = buf;
			}
			fprintf(f, "%s{\"name\":\"%s\",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64
				",\"max_ns\":%" PRIu64 ",\"failed\":%" PRIu64 "}", k ? "," : "", name,
				all[k].count, all[k].total_ns, all[k].max_ns, all[k].failed);
		}
		fputs("]}", f);
	}
	free(all);
	free(top);
	return 0;
}
