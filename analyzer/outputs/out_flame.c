/* Titles, notes and the format switch of `flame`; see out_flame.h. */
#include "out_flame.h"
#include "flame_tree.h"
#include "model_call_time.h"
#include "model_cpu.h"
#include "model_mem.h"
#include "out_common.h"
#include "out_pprof.h"
#include "out_speedscope.h"
#include "py_hide.h"
#include "recorder_cmdline.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

int out_flame_wants_profile(const char *format)
{
	return strcmp(format, "pprof") == 0 || strcmp(format, "speedscope") == 0;
}

/* One graph: the tree for folded/svg/html, the profile for the others. */
struct flame_graph {
	const struct flame_tree *tree;
	const struct stack_profile *profile;
	struct flame_render_opts opts;
};

static int write_graph(const struct flame_request *q, const struct flame_graph *g,
		       const struct py_hide *hide, struct trace_set *ts, FILE *dst)
{
	if (strcmp(q->format, "pprof") == 0) {
		struct pprof_opts po = { .prof = g->profile, .ts = ts, .comment = g->opts.title,
					 .hide = hide };
		return out_pprof_write(&po, dst);
	}
	if (strcmp(q->format, "speedscope") == 0) {
		struct speedscope_opts so = { .prof = g->profile, .ts = ts, .name = g->opts.title,
					      .hide = hide };
		return out_speedscope_write(&so, dst);
	}
	struct flame_tree *hidden = NULL;
	const struct flame_tree *tree = g->tree;
	if (hide) {
		if (!(hidden = py_hide_tree(hide, g->tree)))
			return -ENOMEM;
		tree = hidden;
	}
	int rc;
	if (strcmp(q->format, "svg") == 0)
		rc = flame_write_svg(tree, &g->opts, dst);
	else if (strcmp(q->format, "html") == 0)
		rc = flame_write_html(tree, &g->opts, dst);
	else
		rc = flame_write_folded(tree, dst);
	flame_tree_free(hidden);
	return rc;
}

/* Writes the graph in q->format to q->output or out. */
static int flame_write_tree(const struct flame_request *q, const struct flame_graph *g,
			    struct trace_set *ts, FILE *out, FILE *errout)
{
	FILE *dst = out;
	if (q->output && strcmp(q->output, "-")) {
		dst = fopen(q->output, "w");
		if (!dst) {
			fprintf(errout, OUT_PROG ": %s: cannot create: %s\n", q->output, strerror(errno));
			return -1;
		}
	}
	struct py_hide *hide = NULL;
	int rc = 0;
	if (q->hide_interpreter && !(hide = py_hide_new(ts)))
		rc = -ENOMEM;
	if (!rc)
		rc = write_graph(q, g, hide, ts, dst);
	py_hide_free(hide);
	if (rc == -ENOMEM)
		fprintf(errout, OUT_PROG " flame: out of memory\n");
	if (fflush(dst) || ferror(dst))
		rc = -1;
	if (dst != out && fclose(dst))
		rc = -1;
	if (rc && rc != -ENOMEM) {
		fprintf(errout, OUT_PROG ": %s: write failed: %s\n",
			dst != out ? q->output : "standard output", strerror(errno ? errno : EIO));
	}
	return rc ? -1 : 0;
}

/* "comm (pid N)" with --pid, else the job's command (not the recorder's
 * line around it) or the trace's path. */
static void who_of(const struct flame_request *q, const struct trace_file *f0, char *who,
		   size_t len)
{
	if (q->filter_pid) {
		const struct ts_process *p = trace_file_process(f0, q->pid);
		snprintf(who, len, "%s (pid %u)", p ? p->comm : "process", q->pid);
	} else {
		snprintf(who, len, "%s", f0->cmdline[0] ? recorder_job_command(f0->cmdline) : f0->path);
	}
}

int out_flame_mem(const struct flame_request *q, const struct mem_result *r,
		  struct trace_set *ts, FILE *out, FILE *errout)
{
	const struct trace_file *f0 = trace_set_file(ts, 0);
	int alloc = strcmp(q->kind, "mem-alloc") == 0;
	const struct flame_tree *tree = alloc ? r->alloc : r->inuse;
	char title[512], subtitle[512], b1[32], who[160];
	who_of(q, f0, who, sizeof(who));
	if (alloc) {
		snprintf(title, sizeof(title), "GPU bytes allocated per stack: %s, %s in total",
			 who, out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else if (trace_set_count(ts) > 1) {
		snprintf(title, sizeof(title), "GPU bytes in use %s%s%s: %s, %s in total",
			 q->at_time ? "at " : "at each file's peak", q->at_time ? q->at : "",
			 q->at_time ? " s" : "", who,
			 out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else if (q->at_time) {
		snprintf(title, sizeof(title), "GPU bytes in use at %.3f s%s: %s, %s in total",
			 (double)q->at_ns / 1e9, r->files[0].at_after_end ? " (after the last event)" : "",
			 who, out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	} else {
		snprintf(title, sizeof(title), "GPU bytes in use at the peak, %.3f s: %s, %s in total",
			 (double)r->files[0].peak_t_ns / 1e9, who,
			 out_bytes(flame_tree_total(tree), b1, sizeof(b1)));
	}
	snprintf(subtitle, sizeof(subtitle), "device memory by allocation stack; %zu file%s (%s%s)%s",
		 trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s", f0->path,
		 trace_set_count(ts) > 1 ? ", ..." : "",
		 r->before_frees ? "; frees of memory allocated before the recording are not shown" : "");
	if (r->before_frees)
		fprintf(errout, OUT_PROG ": note: %" PRIu64 " free%s of memory allocated before the "
			"recording (size unknown) %s not in the graph; see '" OUT_PROG " memory'\n",
			r->before_frees, r->before_frees == 1 ? "" : "s", r->before_frees == 1 ? "is" : "are");
	if (!flame_tree_total(tree))
		fprintf(errout, OUT_PROG ": note: no device memory in use at that instant\n");
	struct flame_graph g = {
		.tree = tree, .profile = alloc ? r->alloc_profile : r->inuse_profile,
		.opts = { .title = title, .unit = "bytes", .subtitle = subtitle },
	};
	return flame_write_tree(q, &g, ts, out, errout);
}

int out_flame_cpu(const struct flame_request *q, const struct model_cpu_result *r,
		  struct trace_set *ts, FILE *out, FILE *errout)
{
	char title[256], subtitle[256];
	const struct trace_file *f0 = trace_set_file(ts, 0);
	if (q->filter_pid) {
		const struct ts_process *p = trace_file_process(f0, q->pid);
		snprintf(title, sizeof(title), "CPU samples: %s (pid %u)", p ? p->comm : "process", q->pid);
	} else {
		snprintf(title, sizeof(title), "CPU samples: %s",
			 f0->cmdline[0] ? recorder_job_command(f0->cmdline) : f0->path);
	}
	snprintf(subtitle, sizeof(subtitle), "%" PRIu64 " samples from %zu file%s (%s%s)",
		 r->samples_kept, trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s",
		 f0->path, trace_set_count(ts) > 1 ? ", ..." : "");
	struct flame_graph g = {
		.tree = r->tree, .profile = r->profile,
		.opts = { .title = title, .unit = "samples", .subtitle = subtitle },
	};
	return flame_write_tree(q, &g, ts, out, errout);
}

int out_flame_calls(const struct flame_request *q, const struct call_time_result *r,
		    struct trace_set *ts, FILE *out, FILE *errout)
{
	char title[512], subtitle[512], who[160], d1[32], sampling[200] = "";
	const struct trace_file *f0 = trace_set_file(ts, 0);
	int cuda = strcmp(q->kind, "cuda") == 0, offcpu = strcmp(q->kind, "offcpu") == 0;
	int gpu = strcmp(q->kind, "gpu") == 0;
	who_of(q, f0, who, sizeof(who));
	snprintf(title, sizeof(title), "%s: %s, %s in %" PRIu64 " %s%s",
		 gpu ? "GPU kernel time per launch stack" : cuda ? "Time in CUDA API calls per stack" :
		 offcpu ? "Blocked (off-CPU) time per stack" : "Time in system calls per stack", who,
		 out_duration(r->total_ns, d1, sizeof(d1)), r->calls, gpu ? "kernel" : "call",
		 r->calls == 1 ? "" : "s");
	if (gpu && r->calls_no_stack)
		snprintf(sampling, sizeof(sampling), "; %" PRIu64 " kernel%s without a launch stack "
			 "(its launch not in the trace: under [no launch])", r->calls_no_stack,
			 r->calls_no_stack == 1 ? "" : "s");
	if (cuda && r->launches)
		snprintf(sampling, sizeof(sampling), "; %" PRIu64 " of %" PRIu64 " kernel launches "
			 "carry a stack (the recorder takes one launch in %u), the others are under "
			 "[no stack]", r->launches_with_stack, r->launches, r->launch_stack_every);
	else if (!cuda && !offcpu && !gpu && r->calls_no_stack)
		snprintf(sampling, sizeof(sampling), "; %" PRIu64 " call%s without a stack "
			 "(sampled, or --no-syscall-stacks) under [no stack]", r->calls_no_stack,
			 r->calls_no_stack == 1 ? "" : "s");
	snprintf(subtitle, sizeof(subtitle), "nanoseconds, %s; %zu file%s (%s%s)%s",
		 gpu ? "each kernel's run on the GPU (CUPTI), the kernel as the leaf under the "
			"stack that launched it" :
		 cuda ? "each call without the calls nested in it" : offcpu ?
			"system calls blocked off CPU for --sched-min-us or more, their time "
			"off CPU" : "calls the recorder kept (--syscall-min-us)",
		 trace_set_count(ts), trace_set_count(ts) == 1 ? "" : "s", f0->path,
		 trace_set_count(ts) > 1 ? ", ..." : "", sampling);
	if (sampling[0])
		fprintf(errout, OUT_PROG ": note: %s\n", sampling + 2);
	struct flame_graph g = {
		.tree = r->tree, .profile = r->profile,
		.opts = { .title = title, .unit = "ns", .subtitle = subtitle },
	};
	return flame_write_tree(q, &g, ts, out, errout);
}
