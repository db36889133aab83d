/* Hostile input: records whose counts, lengths and ids lie.  None may crash
 * or over-allocate; each is reported as a malformed record, the rest of the
 * trace is still analyzed, and check says "damaged" (1) or "unusable" (2). */
#include "check.h"
#include "test_analyzer_common.h"

#include "commands.h"
#include "flame_tree.h"
#include "model_cpu.h"
#include "trace_set.h"

#include <unistd.h>

static void hostile_records(struct synth *s)
{
	uint8_t buf[256];

	/* 1. a stack claiming 1000 user frames in a 40-byte record */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_stack st = { .stack_id = 50, .pid = 300, .n_user = 1000 };
	memcpy(buf, &st, sizeof(st));
	synth_raw(s->ev, buf, 40, FR_REC_STACK, 0);
	/* 2. stack id 0 */
	st = (struct fr_rec_stack){ .stack_id = 0, .pid = 300, .n_user = 1 };
	memcpy(buf, &st, sizeof(st));
	synth_raw(s->ev, buf, 32, FR_REC_STACK, 0);
	/* 3. stack 60 defined twice (the first one wins) */
	uint64_t ips_good[] = { 0x10010, 0x10055 };
	uint64_t ips_other[] = { 0x10035 };
	synth_stack(s, 60, 300, ips_good, 0, 2);
	synth_stack(s, 60, 300, ips_other, 0, 1);
	/* 4. a dso claiming 2^28 symbols */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_dso d = { .dso_id = 8, .nsyms = 0x10000000u, .strtab_len = 4, .path_len = 3 };
	memcpy(buf, &d, sizeof(d));
	synth_raw(s->meta, buf, 96, FR_REC_DSO, 0);
	/* 5. dso 7: three symbols, the middle one naming past the strtab */
	static const struct synth_sym h_syms[] = {
		{ 0x10, 0x10, "good_a" }, { 0x30, 0x10, "bad_b" }, { 0x50, 0x10, "good_c" },
	};
	synth_dso(s, 7, 0, "/opt/h.so", h_syms, 3);
	/* ... then the same dso again, its middle name offset corrupted */
	memset(buf, 0, sizeof(buf));
	d = (struct fr_rec_dso){ .dso_id = 7, .nsyms = 3, .strtab_len = 21, .path_len = 9 };
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + 48, "/opt/h.so", 9);
	struct fr_dso_sym syms[3] = { { 0x10, 0x10, 0 }, { 0x30, 0x10, 99999 }, { 0x50, 0x10, 13 } };
	memcpy(buf + 64, syms, sizeof(syms));
	memcpy(buf + 112, "good_a\0bad_b\0good_c\0", 21);
	synth_raw(s->meta, buf, 136, FR_REC_DSO, 0); /* records of one dso add up */
	/* 6. a mapping whose path_len runs past the record */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_mapping m = { .pid = 300, .start = 0x50000, .end = 0x60000, .path_len = 60000 };
	memcpy(buf, &m, sizeof(m));
	synth_raw(s->meta, buf, 80, FR_REC_MAPPING, 0);
	/* 7. an inverted mapping */
	m = (struct fr_rec_mapping){ .pid = 300, .start = 0x90000, .end = 0x80000 };
	memcpy(buf, &m, sizeof(m));
	synth_raw(s->meta, buf, 72, FR_REC_MAPPING, 0);
	/* 8. a process whose cmdline_len is 4 GiB */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_process p = { .pid = 300, .cmdline_len = 0xffffffffu };
	memcpy(buf, &p, sizeof(p));
	synth_raw(s->meta, buf, 64, FR_REC_PROCESS, 0);
	/* 9. stats with 2^32-1 probes */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_stats stats = { .n_probes = 0xffffffffu };
	memcpy(buf, &stats, sizeof(stats));
	synth_raw(s->meta, buf, 72, FR_REC_STATS, 0);
	/* 10. a cpu sample shorter than its fixed part */
	memset(buf, 0, sizeof(buf));
	synth_raw(s->ev, buf, 16, FR_EV_CPU_SAMPLE, 0);
	/* 11. an unknown record type: counted, not a problem */
	synth_raw(s->ev, buf, 16, 0x4242, 0);
	/* 12. a dso of unknown kind */
	memset(buf, 0, sizeof(buf));
	d = (struct fr_rec_dso){ .dso_id = 11, .kind = 9 };
	memcpy(buf, &d, sizeof(d));
	synth_raw(s->meta, buf, 48, FR_REC_DSO, 0);
	/* 13. a dso whose strtab_len runs past the record */
	d = (struct fr_rec_dso){ .dso_id = 12, .strtab_len = 0xfffffff0u };
	memcpy(buf, &d, sizeof(d));
	synth_raw(s->meta, buf, 56, FR_REC_DSO, 0);
	/* 14. calls in flight: 2^32-1 of them in an 88-byte record */
	memset(buf, 0, sizeof(buf));
	struct fr_rec_inflight in = { .seen_ns = 5, .n = 0xffffffffu };
	memcpy(buf, &in, sizeof(in));
	synth_raw(s->meta, buf, 88, FR_REC_INFLIGHT, 0);
	/* 15. an inflight record shorter than its fixed part */
	synth_raw(s->meta, buf, 16, FR_REC_INFLIGHT, 0);

	synth_mapping(s, 300, 0x10000, 0x20000, 0, 7, "/opt/h.so");
	synth_samples(s, 300, 300, 60, 9);
	synth_samples(s, 300, 300, 50, 2); /* the refused stack: missing */
}

static char *run_cmd(int (*cmd)(int, char **, FILE *, FILE *), int argc, char **argv, int *rc,
		     char **err_text)
{
	char *out = NULL, *err = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *o = open_memstream(&out, &out_len), *e = open_memstream(&err, &err_len);
	*rc = cmd(argc, argv, o, e);
	fclose(o);
	fclose(e);
	if (err_text)
		*err_text = err;
	else
		free(err);
	return out;
}

int main(void)
{
	char path[512], garbage[512], empty[512], flipped[512], cut[512];
	synth_path("analyzer_hostile.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	hostile_records(&s);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);

	struct trace_set *ts;
	struct frec_error err;
	const char *paths[] = { path };
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	void *cpu = trace_set_add_model(ts, &model_cpu_ops, NULL);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	struct trace_file *f = trace_set_file(ts, 0);
	CHECK_EQ_U64(f->n_problems, 14);
	for (uint64_t i = 0; i < f->n_problems && i < TS_MAX_PROBLEMS_KEPT; i++)
		printf("problem: +%llu: %s\n", (unsigned long long)f->problems[i].rec_offset,
		       f->problems[i].what);
	CHECK_EQ_U64(trace_file_records_of_type(f, 0x4242), 1);
	CHECK(trace_file_damaged(f));
	CHECK(trace_file_complete(f));
	CHECK(trace_file_stack(f, 50) == NULL);
	CHECK(trace_file_dso(f, 8) == NULL);
	CHECK(f->n_inflight == 0 && f->inflight_seen_ns == 0);
	const struct ts_dso *d7 = trace_file_dso(f, 7);
	/* 3 from the first record + the 2 intact ones of the second */
	CHECK(d7 != NULL && d7->nsyms == 5);
	const struct model_cpu_result *r = model_cpu_result(cpu);
	CHECK_EQ_U64(r->samples, 11);
	CHECK_EQ_U64(r->samples_missing_stack, 2);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	flame_write_folded(r->tree, mem);
	fclose(mem);
	char *sorted = sorted_lines(text);
	CHECK_STR(sorted, "[missing stack] 2\ngood_c;good_a 9\n");
	free(sorted);
	free(text);
	trace_set_free(ts);

	/* check: damaged (malformed records) but complete -> 1 */
	char *argv_check[] = { "check", path, NULL };
	int rc;
	char *out = run_cmd(cmd_check, 2, argv_check, &rc, NULL);
	CHECK_EQ_U64(rc, 1);
	CHECK(strstr(out, ": damaged: recovered") != NULL);
	CHECK(strstr(out, "malformed record: chunk at offset") != NULL);
	CHECK(strstr(out, "1000 user frames do not fit") != NULL);
	free(out);

	/* not a trace -> 2 */
	synth_path("analyzer_garbage.frec", garbage, sizeof(garbage));
	FILE *g = fopen(garbage, "w");
	for (int i = 0; i < 1000; i++)
		fputs("this is not a flightrec trace\n", g);
	fclose(g);
	synth_path("analyzer_empty.frec", empty, sizeof(empty));
	fclose(fopen(empty, "w"));
	char *argv_bad[] = { "check", garbage, empty, "/nonexistent/x.frec", NULL };
	out = run_cmd(cmd_check, 4, argv_bad, &rc, NULL);
	CHECK_EQ_U64(rc, 2);
	printf("%s", out);
	CHECK(strstr(out, "analyzer_garbage.frec: unusable: ") != NULL);
	CHECK(strstr(out, "analyzer_empty.frec: unusable: ") != NULL);
	CHECK(strstr(out, "/nonexistent/x.frec: unusable: ") != NULL);
	free(out);

	/* A flipped byte inside the events chunk and a truncated copy: both
	 * still open; check says 1 and names what was recovered. */
	std_trace_write(synth_path("analyzer_flip.frec", flipped, sizeof(flipped)), 1);
	FILE *fl = fopen(flipped, "r+b");
	fseek(fl, 0, SEEK_END);
	long size = ftell(fl);
	fseek(fl, size / 2, SEEK_SET);
	int ch = fgetc(fl);
	fseek(fl, size / 2, SEEK_SET);
	fputc(ch ^ 0x5a, fl);
	fclose(fl);
	char *argv_flip[] = { "check", flipped, NULL };
	out = run_cmd(cmd_check, 2, argv_flip, &rc, NULL);
	printf("%s", out);
	CHECK_EQ_U64(rc, 1);
	CHECK(strstr(out, "damaged") != NULL);
	free(out);
	char *argv_info[] = { "info", flipped, NULL };
	char *err_text;
	out = run_cmd(cmd_info, 2, argv_info, &rc, &err_text);
	CHECK_EQ_U64(rc, 0);
	CHECK(strstr(err_text, "warning: ") != NULL);
	free(err_text);
	free(out);

	synth_path("analyzer_cut.frec", cut, sizeof(cut));
	std_trace_write(cut, 1);
	CHECK_EQ_U64(truncate(cut, size * 2 / 3), 0);
	char *argv_cut[] = { "check", cut, NULL };
	out = run_cmd(cmd_check, 2, argv_cut, &rc, NULL);
	printf("%s", out);
	CHECK_EQ_U64(rc, 1);
	CHECK(strstr(out, ": incomplete: no end record; recovered") != NULL);
	free(out);
	return check_finish();
}
