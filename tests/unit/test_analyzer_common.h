/* Shared bits of the analyzer tests: the standard synthetic trace (known
 * processes, mappings, symbols, stacks and sample counts) and output capture.
 * Not a test itself. */
#ifndef FLIGHTREC_TEST_ANALYZER_COMMON_H
#define FLIGHTREC_TEST_ANALYZER_COMMON_H

#include "test_analyzer_synth.h"

#define K(x) (0xffffffff81000000ull + (x))

/* pid 100 "trainer" runs /usr/bin/trainer and libx.so; pid 200 "loader".
 *
 *   main;work_a                                   300  (pid 100)
 *   main;work_b                                   100  (pid 100)
 *   main;foo::bar()                                 7  (pid 100, mangled _ZN3foo3barEv)
 *   main;x_func;do_syscall_64_[k];schedule_[k]      5  (pid 100, libx.so + kernel)
 *   main;[unknown];libx.so+0x1900                   3  (pid 100, unmapped ip, no symbol)
 *   [unknown]_[k]                                   2  (pid 200, kernel ip without symbol)
 *   [no stack]                                      4  (pid 200, stack id 0)
 *   [missing stack]                                 1  (pid 200, undefined stack id)
 */
#define STD_FOLDED_ALL \
	"[missing stack] 1\n" \
	"[no stack] 4\n" \
	"[unknown]_[k] 2\n" \
	"main;[unknown];libx.so+0x1900 3\n" \
	"main;foo::bar() 7\n" \
	"main;work_a 300\n" \
	"main;work_b 100\n" \
	"main;x_func;do_syscall_64_[k];schedule_[k] 5\n"
#define STD_FOLDED_PID100 \
	"main;[unknown];libx.so+0x1900 3\n" \
	"main;foo::bar() 7\n" \
	"main;work_a 300\n" \
	"main;work_b 100\n" \
	"main;x_func;do_syscall_64_[k];schedule_[k] 5\n"

static inline void std_trace_body(struct synth *s)
{
	synth_process(s, 100, 1, "trainer", "python train.py --epochs 1");
	synth_thread(s, 100, 100, "trainer");
	synth_thread(s, 100, 101, "dataloader");
	synth_process(s, 200, 100, "loader", "python loader.py");
	synth_mapping(s, 100, 0x400000, 0x500000, 0, 1, "/usr/bin/trainer");
	synth_mapping(s, 100, 0x7f0000000000ull, 0x7f0000010000ull, 0x1000, 2, "/usr/lib/libx.so");

	uint64_t s1[] = { 0x402010, 0x401010 };
	uint64_t s2[] = { 0x403010, 0x401010 };
	uint64_t s3[] = { 0x404004, 0x401010 };
	uint64_t s4[] = { K(0x8), K(0x1500), 0x7f0000000805ull, 0x401010 };
	uint64_t s5[] = { 0x7f0000000900ull, 0x999999, 0x401010 };
	uint64_t s6[] = { 0xffffffff90000000ull };
	synth_stack(s, 1, 100, s1, 0, 2);
	synth_stack(s, 2, 100, s2, 0, 2);
	synth_stack(s, 3, 100, s3, 0, 2);
	synth_stack(s, 4, 100, s4, 2, 2);
	synth_stack(s, 5, 100, s5, 0, 3);
	synth_stack(s, 6, 200, s6, 1, 0);
	synth_samples(s, 100, 100, 1, 200);
	synth_samples(s, 100, 101, 1, 100);
	synth_samples(s, 100, 100, 2, 100);
	synth_samples(s, 100, 100, 3, 7);
	synth_samples(s, 100, 100, 4, 5);
	synth_samples(s, 100, 100, 5, 3);
	synth_samples(s, 200, 200, 6, 2);
	synth_samples(s, 200, 200, 0, 4);
	synth_samples(s, 200, 200, 999, 1);
	synth_syscall(s, 100, 0, 4096, 2000000);   /* read */
	synth_syscall(s, 100, 0, -11, 1000000);    /* read, EAGAIN */
	synth_syscall(s, 100, 1, 10, 500000);      /* write */
	synth_stats(s, 522, 0);

	/* Symbols come last, as the recorder writes them when it stops. */
	static const struct synth_sym trainer_syms[] = {
		{ 0x1000, 0x100, "main" },
		{ 0x2000, 0x100, "work_a" },
		{ 0x3000, 0x100, "work_b" },
		{ 0x4000, 0x100, "_ZN3foo3barEv" },
	};
	static const struct synth_sym libx_syms[] = {
		{ 0x1800, 0x10, "x_func" },
	};
	static const struct synth_sym kernel_syms[] = {
		{ K(0x0), 0x100, "schedule" },
		{ K(0x1000), 0, "do_syscall_64" },
		{ K(0x2000), 0x10, "page_fault" },
	};
	synth_dso(s, 1, 0, "/usr/bin/trainer", trainer_syms, 4);
	synth_dso(s, 2, 0, "/usr/lib/libx.so", libx_syms, 1);
	synth_dso(s, 3, 1, "[kernel.kallsyms]", kernel_syms, 3);
}

/* Writes the standard trace to path; complete = clean close. */
static inline int std_trace_write(const char *path, int complete)
{
	struct synth s;
	if (synth_open(&s, path))
		return -1;
	std_trace_body(&s);
	if (complete)
		return synth_close(&s, 522, 3);
	synth_abandon(&s);
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text sorted, so tests do not depend on the tree's order. */
static inline char *sorted_lines(const char *text)
{
	char *copy = strdup(text);
	size_t n = 0, cap = 16, len = strlen(text);
	char **lines = malloc(cap * sizeof(*lines));
	for (char *save, *tok = strtok_r(copy, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save)) {
		if (n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof(*lines));
		lines[n++] = tok;
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	char *out = calloc(1, len + 2);
	for (size_t i = 0; i < n; i++) {
		strcat(out, lines[i]);
		strcat(out, "\n");
	}
	free(lines);
	free(copy);
	return out;
}

#endif
