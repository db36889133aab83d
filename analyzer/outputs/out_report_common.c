/* What more than one of the report's sections writes (see
 * out_report_sections.h): a process's label, a stack as one line, a flame
 * graph.  Kept here so that two sections naming the same process or stack
 * cannot word it differently.  Not a section itself. */
#include "out_report_sections.h"
#include "out_common.h"
#include "out_mem_stacks.h"
#include "trace_set.h"

#include <inttypes.h>

void report_process_label(char *buf, size_t len, const struct trace_file *f, uint32_t pid)
{
	const struct ts_process *p = trace_file_process(f, pid);
	int64_t rank;
	int n = 0;
	if (out_process_rank(f, pid, &rank))
		n = snprintf(buf, len, "rank %" PRId64 ": ", rank);
	snprintf(buf + n, len - (size_t)n, "%s (pid %u) on %s", p && p->comm[0] ? p->comm : "process",
		 pid, f->hdr.host[0] ? f->hdr.host : "?");
}

void report_stack_json(FILE *f, struct trace_set *ts, uint32_t file, uint32_t stack_id)
{
	char buf[1024];
	out_json_str(f, mem_stack_line(ts, file, stack_id, 12, buf, sizeof(buf)));
}

int report_flame_json(FILE *f, const struct flame_tree *t, const char *title, const char *subtitle,
		      const char *unit, size_t max_nodes)
{
	/* min_fraction 0: flame_render's default, 0.01% of the graph's total */
	struct flame_render_opts o = { .title = title, .subtitle = subtitle, .unit = unit,
				       .one_line = 1 };
	struct flame_render_limits lim = { .max_nodes = max_nodes };
	return flame_write_json(t, &o, &lim, f);
}
