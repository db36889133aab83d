/* The cpu model end to end through the library: decode a synthetic trace,
 * symbolize, build the flame tree, compare the folded output exactly. */
#include "check.h"
#include "test_analyzer_common.h"

#include "flame_tree.h"
#include "model_cpu.h"
#include "trace_set.h"

static char *folded_of(const char *const *paths, size_t n, int filter_pid, uint32_t pid,
		       struct model_cpu_result *result_out)
{
	struct trace_set *ts;
	struct frec_error err;
	if (trace_set_open(paths, n, &ts, &err)) {
		fprintf(stderr, "open: %s\n", err.what);
		return NULL;
	}
	struct model_opts opts = { .filter_pid = filter_pid, .pid = pid };
	void *cpu = trace_set_add_model(ts, &model_cpu_ops, &opts);
	CHECK(cpu != NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	const struct model_cpu_result *r = model_cpu_result(cpu);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	CHECK_EQ_U64(flame_write_folded(r->tree, mem), 0);
	fclose(mem);
	if (result_out)
		*result_out = *r;
	trace_set_free(ts);
	char *sorted = sorted_lines(text);
	free(text);
	return sorted;
}

int main(void)
{
	char path[512], path2[512];
	synth_path("analyzer_cpu.frec", path, sizeof(path));
	CHECK_EQ_U64(std_trace_write(path, 1), 0);

	const char *paths[] = { path };
	struct model_cpu_result r;
	char *all = folded_of(paths, 1, 0, 0, &r);
	CHECK_STR(all, STD_FOLDED_ALL);
	CHECK_EQ_U64(r.samples, 422);
	CHECK_EQ_U64(r.samples_kept, 422);
	CHECK_EQ_U64(r.samples_no_stack, 4);
	CHECK_EQ_U64(r.samples_missing_stack, 1);
	free(all);

	char *pid100 = folded_of(paths, 1, 1, 100, &r);
	CHECK_STR(pid100, STD_FOLDED_PID100);
	CHECK_EQ_U64(r.samples_kept, 415);
	free(pid100);

	char *none = folded_of(paths, 1, 1, 4242, &r);
	CHECK_STR(none, "");
	CHECK_EQ_U64(r.samples_kept, 0);
	free(none);

	/* The same trace recorded without END: same profile. */
	synth_path("analyzer_cpu_incomplete.frec", path2, sizeof(path2));
	CHECK_EQ_U64(std_trace_write(path2, 0), 0);
	const char *paths2[] = { path2 };
	char *inc = folded_of(paths2, 1, 0, 0, NULL);
	CHECK_STR(inc, STD_FOLDED_ALL);
	free(inc);

	/* Two files (two nodes): ids are per file, counts add up. */
	const char *both[] = { path, path2 };
	char *merged = folded_of(both, 2, 1, 100, &r);
	CHECK_STR(merged,
		  "main;[unknown];libx.so+0x1900 6\n"
		  "main;foo::bar() 14\n"
		  "main;work_a 600\n"
		  "main;work_b 200\n"
		  "main;x_func;do_syscall_64_[k];schedule_[k] 10\n");
	CHECK_EQ_U64(r.samples_kept, 830);
	free(merged);
	return check_finish();
}
