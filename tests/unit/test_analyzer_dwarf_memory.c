/* The decode pass keeps memory bounded by DISTINCT dwarf-mode stacks, not by
 * the number of raw stacks (trace_set.c resolves each FR_REC_USTACK as it
 * reads it and keeps ~12 bytes per raw id): a synthetic trace of N raw
 * stacks of 16 KiB each, taken from the real snapshot of
 * tests/unit/unwind_target.c (main -> level1 -> level2 -> level3 inside
 * libc), that differ only in what unwinding ignores (scratch registers,
 * bytes past the stack's end), must give ONE canonical stack, one stack in
 * the cpu model, and a peak RSS far below N x 16 KiB.  Prints records/s.
 * x86-64 only; exit 77 (skip) elsewhere or without unwind_target. */
#include <stdio.h>

/* unwind_target sits next to this test's executable (tests/unit/CMakeLists.txt
 * builds both into one directory) */
static char unwind_target_path[560];
#define UNWIND_TARGET unwind_target_path
#define UNWIND_TEST_NO_MAIN
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "test_analyzer_unwind.c"

#include <sys/resource.h>

#define RAW_STACK_BYTES 16384u

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* kB from a "Key:   123 kB" line of /proc/self/status, 0 when unknown */
static uint64_t status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	uint64_t kb = 0;
	size_t klen = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			kb = strtoull(line + klen + 1, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/* Resets VmHWM to the current RSS (Linux 4.0+); 0 on success. */
static int reset_peak_rss(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f)
		return -1;
	int ok = fputs("5", f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void write_trace(const struct snap *s, const char *target_path, const char *path,
			uint32_t n)
{
	struct synth sy;
	CHECK_EQ_U64(synth_open(&sy, path), 0);
	synth_process(&sy, PID, 1, "unwind_target", "unwind_target snap");
	char *copy = strdup(s->maps);
	for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long lo, hi, off;
		char *slash = strchr(line, '/');
		if (!slash || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
			continue;
		struct file_img *f = file_of(slash);
		synth_mapping(&sy, PID, lo, hi, off, f ? (uint32_t)(f - files) + 1 : 0, slash);
	}
	free(copy);
	for (size_t i = 0; i < n_files; i++)
		if (files[i].reduced)
			synth_unwind(&sy, (uint32_t)i + 1, files[i].reduced, files[i].reduced_len);
	/* the target's symbols (file offsets, as test_trace derives them) */
	struct file_img *tf = file_of(target_path);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)tf->bytes;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(tf->bytes + eh->e_phoff);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(tf->bytes + eh->e_shoff);
	uint64_t main_vaddr = 0, delta = 0;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(tf->bytes + sh[i].sh_offset);
		const char *str = (const char *)tf->bytes + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (!strcmp(str + sym[k].st_name, "main"))
				main_vaddr = sym[k].st_value;
	}
	uint64_t base = s->fn[0] - main_vaddr;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && main_vaddr >= ph[i].p_vaddr &&
		    main_vaddr < ph[i].p_vaddr + ph[i].p_memsz)
			delta = ph[i].p_vaddr - ph[i].p_offset;
	struct synth_sym syms[4] = {
		{ s->fn[0] - base - delta, (uint32_t)s->fn_size[0], "main" },
		{ s->fn[1] - base - delta, (uint32_t)s->fn_size[1], "level1" },
		{ s->fn[2] - base - delta, (uint32_t)s->fn_size[2], "level2" },
		{ s->fn[3] - base - delta, (uint32_t)s->fn_size[3], "level3" },
	};
	synth_dso(&sy, (uint32_t)(tf - files) + 1, 0, target_path, syms, 4);

	/* n raw stacks of RAW_STACK_BYTES: the snapshot, then bytes past the
	 * end of the stack mapping (never read by the unwind) that differ per
	 * record, with different scratch registers; one sample each, under the
	 * recorder's raw ids (bit 31 set) */
	uint32_t len = s->stack_len > RAW_STACK_BYTES ? s->stack_len : RAW_STACK_BYTES;
	uint8_t *stack = calloc(1, len);
	memcpy(stack, s->stack, s->stack_len);
	uint64_t regs[17];
	memcpy(regs, s->regs, sizeof(regs));
	for (uint32_t i = 0; i < n; i++) {
		regs[0] = i;                  /* rax */
		regs[2] = 0x5555ull * i;      /* rcx */
		regs[11] = ~(uint64_t)i;      /* r11 */
		for (uint32_t at = s->stack_len; at + 8 <= len; at += 1024) {
			uint64_t v = (uint64_t)i << 20 | at;
			memcpy(stack + at, &v, sizeof(v));
		}
		uint32_t id = 0x80000000u | (i + 1);
		synth_ustack(&sy, id, regs, stack, len, NULL, 0, 0, len, 0);
		synth_samples(&sy, PID, PID + 1, id, 1);
	}
	free(stack);
	CHECK_EQ_U64(synth_close(&sy, 0, 0), 0);
}

static void test_bound(const struct snap *s, const char *target_path, uint32_t n)
{
	char path[512];
	synth_path("analyzer_dwarf_memory.frec", path, sizeof(path));
	write_trace(s, target_path, path, n);

	struct trace_set *ts;
	struct frec_error err;
	const char *paths[] = { path };
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	struct model_opts opts = { 0 };
	void *cpu = trace_set_add_model(ts, &model_cpu_ops, &opts);
	int peak_ok = reset_peak_rss() == 0;
	uint64_t rss_before = status_kb("VmRSS");
	double t0 = now_s();
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	double dt = now_s() - t0;
	uint64_t peak = status_kb("VmHWM");
	const struct trace_file *f = trace_set_file(ts, 0);

	double raw_mib = (double)n * RAW_STACK_BYTES / (1 << 20);
	printf("%u raw stacks (%.0f MiB of stack copies): %llu canonical, %llu stack entries, "
	       "raw-id map %zu slots (%zu bytes); %.3f s, %.0f records/s\n", n, raw_mib,
	       (unsigned long long)f->dwarf_stats.distinct, (unsigned long long)f->n_stacks,
	       f->ustack_ids.cap, f->ustack_ids.cap * sizeof(uint64_t), dt,
	       (double)(f->records) / dt);
	CHECK_EQ_U64(f->dwarf_stats.records, n);
	CHECK_EQ_U64(f->dwarf_stats.distinct, 1);
	CHECK_EQ_U64(f->n_stacks, 1);
	CHECK_EQ_U64(f->ustack_ids.count, n);
	CHECK(f->ustack_ids.cap * sizeof(uint64_t) <= 24 * (size_t)n); /* 8-byte slots, <= 3/4 full */
	CHECK(f->n_ustack_names < 64);
	CHECK_EQ_U64(f->n_problems, 0);
	/* the raw ids resolve too (cmd_dump reads events itself) */
	const struct ts_stack *first = trace_file_stack(f, 0x80000001u);
	const struct ts_stack *last = trace_file_stack(f, 0x80000000u | n);
	CHECK(first && first == last && first->ustack && (first->stack_id & TS_CANON_STACK_BIT));

	const struct model_cpu_result *r = model_cpu_result(cpu);
	CHECK_EQ_U64(r->samples, n);
	CHECK_EQ_U64(r->distinct_stacks, 1);
	CHECK_EQ_U64(r->samples_missing_stack, 0);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	CHECK_EQ_U64(flame_write_folded(r->tree, mem), 0);
	fclose(mem);
	char want[32];
	snprintf(want, sizeof(want), " %u\n", n);
	CHECK(strstr(text, ";main;level1;level2;level3;") != NULL);
	CHECK(strstr(text, want) != NULL);
	CHECK(strchr(text, '\n') == text + len - 1); /* one line: one stack */
	if (!strstr(text, ";main;level1;level2;level3;"))
		fputs(text, stderr);
	free(text);

	if (peak_ok && peak && rss_before) {
		double grown = (double)(peak > rss_before ? peak - rss_before : 0) / 1024;
		printf("peak RSS during the run: %.1f MiB above the %.1f MiB before it "
		       "(the stack copies alone are %.0f MiB)\n", grown, rss_before / 1024.0, raw_mib);
		if (!SANITIZED) /* ASan's quarantine and shadow memory blur RSS */
			CHECK(grown < raw_mib / 4 && grown < 64);
	} else {
		printf("peak RSS not measured (/proc/self/clear_refs unavailable)\n");
	}
	trace_set_free(ts);
	unlink(path);
}

int main(void)
{
#if !defined(__x86_64__)
	printf("skipped: x86-64 only\n");
	return 77;
#else
	char self[512];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(self) - 1) {
		fprintf(stderr, "FAIL: cannot locate this executable\n");
		return 1;
	}
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	else
		self[0] = '\0';
	snprintf(unwind_target_path, sizeof(unwind_target_path), "%sunwind_target", self);
	if (access(unwind_target_path, X_OK)) {
		/* built with this test (tests/unit/CMakeLists.txt) */
		fprintf(stderr, "FAIL: %s not built\n", unwind_target_path);
		return 1;
	}
	struct snap s;
	char target[512];
	memset(&s, 0, sizeof(s));
	if (take_snapshot(&s, target, sizeof(target))) {
		fprintf(stderr, "FAIL: could not run %s\n", unwind_target_path);
		return 1;
	}
	test_bound(&s, target, SANITIZED ? 4000 : 20000);
	free(s.stack);
	free(s.maps);
	for (size_t i = 0; i < n_files; i++) {
		free(files[i].bytes);
		free(files[i].reduced);
	}
	return check_finish();
#endif
}
