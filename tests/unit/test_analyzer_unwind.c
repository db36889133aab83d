/* Offline unwinding (unwind/unwind.c) and the dwarf-mode pipeline
 * (stack_merge.c through trace_set and the cpu model) on a real stack:
 * tests/unit/unwind_target.c, built -O2 -fomit-frame-pointer, snapshots its
 * registers and stack inside libc under main -> level1 -> level2 -> level3
 * and exits; the stack is then unwound from the snapshot with (a) its files
 * whole, (b) reduced images like the recorder's (ELF header, PT_LOAD
 * headers, .eh_frame_hdr/.eh_frame/.debug_frame at their addresses,
 * .shstrtab), (c) a synthetic trace carrying those images, with Python
 * frames and hostile records.  Prints unwind throughput (not a pass/fail
 * number).  x86-64 only; exit 77 (skip) elsewhere. */
#include "check.h"
#include "test_analyzer_common.h"

#include "flame_tree.h"
#include "model_cpu.h"
#include "stack_merge.h"
#include "trace_set.h"
#include "unwind.h"

#include <elf.h>
#include <time.h>
#include <unistd.h>

#ifndef UNWIND_TARGET
#define UNWIND_TARGET "unwind_target"
#endif

struct snap {
	uint64_t regs[17];
	uint64_t fn[4];      /* main level1 level2 level3 */
	uint64_t fn_size[4];
	uint8_t *stack;
	uint32_t stack_len;
	char *maps;
};

struct file_img { char path[512]; uint8_t *bytes; size_t len; uint8_t *reduced; size_t reduced_len; };

static struct file_img files[64];
static size_t n_files;

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *in = fopen(path, "rb");
	if (!in)
		return NULL;
	fseek(in, 0, SEEK_END);
	long n = ftell(in);
	fseek(in, 0, SEEK_SET);
	uint8_t *buf = n > 0 ? malloc((size_t)n) : NULL;
	if (buf && fread(buf, 1, (size_t)n, in) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(in);
	*len = buf ? (size_t)n : 0;
	return buf;
}

/* The recorder's reduced image, made the simple way: the ELF header, the
 * PT_LOAD program headers, the unwind sections at their sh_addr, .shstrtab. */
static uint8_t *reduce(const uint8_t *img, size_t len, size_t *out_len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	if (len < sizeof(*eh) || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len ||
	    eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(img + eh->e_phoff);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	const char *names = (const char *)img + sh[eh->e_shstrndx].sh_offset;
	static const char *const keep[] = { ".eh_frame_hdr", ".eh_frame", ".debug_frame" };
	uint8_t *out = calloc(1, len + 4096);
	Elf64_Ehdr *oh = (Elf64_Ehdr *)out;
	*oh = *eh;
	size_t at = sizeof(*eh), n_load = 0;
	oh->e_phoff = at;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			memcpy(out + at, &ph[i], sizeof(ph[i]));
			at += sizeof(ph[i]);
			n_load++;
		}
	oh->e_phnum = (uint16_t)n_load;
	Elf64_Shdr osh[5];
	memset(osh, 0, sizeof(osh));
	char strtab[64] = "";
	size_t strtab_len = 1, n_sh = 1;
	for (size_t k = 0; k < 3; k++)
		for (int i = 0; i < eh->e_shnum; i++) {
			if (strcmp(names + sh[i].sh_name, keep[k]) || sh[i].sh_type == SHT_NOBITS)
				continue;
			at = (at + 7) & ~(size_t)7;
			osh[n_sh] = sh[i];
			osh[n_sh].sh_offset = at;
			osh[n_sh].sh_name = (uint32_t)strtab_len;
			osh[n_sh].sh_link = 0;
			memcpy(strtab + strtab_len, keep[k], strlen(keep[k]) + 1);
			strtab_len += strlen(keep[k]) + 1;
			memcpy(out + at, img + sh[i].sh_offset, sh[i].sh_size);
			at += sh[i].sh_size;
			n_sh++;
		}
	osh[n_sh] = (Elf64_Shdr){ .sh_name = (uint32_t)strtab_len, .sh_type = SHT_STRTAB,
				  .sh_offset = at, .sh_addralign = 1 };
	memcpy(strtab + strtab_len, ".shstrtab", 10);
	strtab_len += 10;
	osh[n_sh].sh_size = strtab_len;
	memcpy(out + at, strtab, strtab_len);
	at = (at + strtab_len + 7) & ~(size_t)7;
	oh->e_shstrndx = (uint16_t)n_sh++;
	oh->e_shoff = at;
	oh->e_shnum = (uint16_t)n_sh;
	memcpy(out + at, osh, n_sh * sizeof(osh[0]));
	*out_len = at + n_sh * sizeof(osh[0]);
	return out;
}

static struct file_img *file_of(const char *path)
{
	for (size_t i = 0; i < n_files; i++)
		if (!strcmp(files[i].path, path))
			return &files[i];
	if (n_files == 64)
		return NULL;
	struct file_img *f = &files[n_files];
	snprintf(f->path, sizeof(f->path), "%s", path);
	if (!(f->bytes = slurp(path, &f->len)))
		return NULL;
	f->reduced = reduce(f->bytes, f->len, &f->reduced_len);
	n_files++;
	return f;
}

/* symbol sizes of the target's functions, from its .symtab */
static void symbol_sizes(struct snap *s, const char *path)
{
	static const char *const want[] = { "main", "level1", "level2", "level3" };
	struct file_img *f = file_of(path);
	if (!f)
		return;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->bytes;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(f->bytes + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(f->bytes + sh[i].sh_offset);
		const char *str = (const char *)f->bytes + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			for (int w = 0; w < 4; w++)
				if (!strcmp(str + sym[k].st_name, want[w]))
					s->fn_size[w] = sym[k].st_size;
	}
}

static int take_snapshot(struct snap *s, char *target_path, size_t target_len)
{
	char path[512], cmd[1200];
	synth_path("unwind_snapshot.bin", path, sizeof(path));
	unlink(path);
	snprintf(cmd, sizeof(cmd), "'%s' '%s'", UNWIND_TARGET, path);
	if (system(cmd) != 0)
		return -1;
	size_t len;
	uint8_t *b = slurp(path, &len);
	uint32_t lens[2];
	if (!b || len < 8 + 17 * 8 + 32 + 8 || memcmp(b, "FRUWSNAP", 8)) {
		free(b);
		return -1;
	}
	memcpy(s->regs, b + 8, sizeof(s->regs));
	memcpy(s->fn, b + 8 + 136, sizeof(s->fn));
	memcpy(lens, b + 8 + 136 + 32, sizeof(lens));
	size_t at = 8 + 136 + 32 + 8;
	if ((uint64_t)at + lens[0] + lens[1] > len) {
		free(b);
		return -1;
	}
	s->stack = malloc(lens[0]);
	memcpy(s->stack, b + at, lens[0]);
	s->stack_len = lens[0];
	s->maps = calloc(1, lens[1] + 1);
	memcpy(s->maps, b + at + lens[0], lens[1]);
	free(b);
	target_path[0] = '\0';
	for (char *line = s->maps; *line;) {
		unsigned long long lo, hi;
		int used = 0;
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *slash = strchr(line, '/');
		if (slash && sscanf(line, "%llx-%llx %*s %*s %*s %*s%n", &lo, &hi, &used) == 2 &&
		    s->fn[0] >= lo && s->fn[0] < hi)
			snprintf(target_path, target_len, "%s", slash);
		if (nl)
			*nl = '\n';
		line = nl ? nl + 1 : line + strlen(line);
	}
	symbol_sizes(s, target_path);
	unlink(path);
	return target_path[0] ? 0 : -1;
}

/* The file-backed mappings of the snapshot, with whole or reduced images. */
static size_t modules_of(const struct snap *s, struct uw_module *mods, size_t cap, int reduced)
{
	size_t n = 0;
	char *copy = strdup(s->maps);
	for (char *line = strtok(copy, "\n"); line && n < cap; line = strtok(NULL, "\n")) {
		unsigned long long lo, hi, off;
		char *slash = strchr(line, '/');
		if (!slash || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
			continue;
		struct file_img *f = file_of(slash);
		if (!f || (reduced && !f->reduced))
			continue;
		mods[n++] = (struct uw_module){ lo, hi, off, reduced ? f->reduced : f->bytes,
						reduced ? f->reduced_len : f->len, f->path };
	}
	free(copy);
	return n;
}

static int which_fn(const struct snap *s, uint64_t pc)
{
	for (int w = 0; w < 4; w++)
		if (pc >= s->fn[w] && pc < s->fn[w] + (s->fn_size[w] ? s->fn_size[w] : 1))
			return w;
	return -1;
}

/* level3, level2, level1, main in a row, and the leaf elsewhere (libc). */
static void check_chain(const struct snap *s, const struct uw_frame *fr, size_t n, const char *what)
{
	int at = -1;
	for (size_t i = 0; i < n; i++)
		if (which_fn(s, fr[i].pc - !fr[i].activation) == 3) {
			at = (int)i;
			break;
		}
	int ok = at > 0 && (size_t)at + 3 < n &&
		 which_fn(s, fr[at + 1].pc - 1) == 2 && which_fn(s, fr[at + 2].pc - 1) == 1 &&
		 which_fn(s, fr[at + 3].pc - 1) == 0;
	if (!ok) {
		fprintf(stderr, "%s: chain not found in %zu frames:\n", what, n);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  #%zu 0x%llx fn %d\n", i, (unsigned long long)fr[i].pc,
				which_fn(s, fr[i].pc - !fr[i].activation));
	}
	CHECK(ok);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void test_process(const struct snap *s)
{
	struct uw_module mods[64];
	struct uw_frame fr[UW_MAX_FRAMES];
	enum uw_end end;
	char why[160];
	for (int reduced = 0; reduced < 2; reduced++) {
		size_t n_mods = modules_of(s, mods, 64, reduced);
		CHECK(n_mods >= 3);
		struct uw_process *p = uw_process_new(4242, mods, n_mods, NULL, why, sizeof(why));
		CHECK(p != NULL);
		if (!p) {
			fprintf(stderr, "uw_process_new: %s\n", why);
			continue;
		}
		size_t n = uw_unwind(p, 4242, s->regs, s->stack, s->stack_len, fr, UW_MAX_FRAMES, &end);
		check_chain(s, fr, n, reduced ? "reduced images" : "whole files");
		CHECK(fr[0].activation && fr[0].pc == s->regs[16]);
		CHECK_EQ_U64(end, UW_END_OUTERMOST);
		/* libdw alone gives the same frames */
		struct uw_frame slow[UW_MAX_FRAMES];
		enum uw_end slow_end;
		uint64_t n_fast, n_slow;
		uw_process_fast_path(p, 0, NULL, NULL);
		size_t n_libdw = uw_unwind(p, 4242, s->regs, s->stack, s->stack_len, slow,
					   UW_MAX_FRAMES, &slow_end);
		uw_process_fast_path(p, 1, &n_fast, &n_slow);
		check_chain(s, slow, n_libdw, "libdw alone");
		CHECK_EQ_U64(n_libdw, n);
		CHECK_EQ_U64(slow_end, end);
		int same = n_libdw == n;
		for (size_t i = 0; same && i < n; i++)
			same = slow[i].pc == fr[i].pc && slow[i].activation == fr[i].activation;
		CHECK(same);
		printf("%s: %zu frames, fast path taken %llu of %llu\n",
		       reduced ? "reduced images" : "whole files", n, (unsigned long long)n_fast,
		       (unsigned long long)(n_fast + n_slow));

		/* the copy cut short: fewer frames, never a crash */
		size_t n_short = uw_unwind(p, 4242, s->regs, s->stack, 64, fr, UW_MAX_FRAMES, &end);
		CHECK(n_short >= 1 && n_short < n);
		CHECK(end != UW_END_OUTERMOST);
		/* room for 2 frames */
		CHECK_EQ_U64(uw_unwind(p, 4242, s->regs, s->stack, s->stack_len, fr, 2, &end), 2);
		CHECK_EQ_U64(end, UW_END_LIMIT);
		/* garbage registers and stack */
		uint64_t junk[17];
		uint8_t junk_stack[512];
		for (int i = 0; i < 17; i++)
			junk[i] = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		for (size_t i = 0; i < sizeof(junk_stack); i++)
			junk_stack[i] = (uint8_t)(i * 131);
		CHECK(uw_unwind(p, 1, junk, junk_stack, sizeof(junk_stack), fr, UW_MAX_FRAMES, &end) >= 1);
		memcpy(junk, s->regs, sizeof(junk));
		junk[7] = 8; /* rsp near 0 */
		CHECK(uw_unwind(p, 1, junk, s->stack, s->stack_len, fr, UW_MAX_FRAMES, &end) >= 1);
		CHECK(uw_unwind(p, 1, s->regs, NULL, 0, fr, UW_MAX_FRAMES, &end) >= 1);

		for (int fast = 0; reduced && fast < 2; fast++) { /* throughput, one reused Dwfl */
			int rounds = fast ? 200000 : 20000;
			uw_process_fast_path(p, fast, NULL, NULL);
			double t0 = now_s();
			for (int i = 0; i < rounds; i++)
				uw_unwind(p, 4242, s->regs, s->stack, s->stack_len, fr, UW_MAX_FRAMES, &end);
			double dt = now_s() - t0;
			printf("unwind (%s): %zu frames, %.2f us per stack, %.0f stacks/s (one core)\n",
			       fast ? "cached rules" : "libdw", n, dt / rounds * 1e6, rounds / dt);
		}
		uw_process_free(p);
	}
	/* images that are not ELF, or not x86-64: skipped, still no crash */
	static const uint8_t not_elf[128] = "this is not an ELF file";
	mods[0] = (struct uw_module){ 0x1000, 0x2000, 0, not_elf, sizeof(not_elf), "junk" };
	size_t skipped = 0;
	struct uw_process *p = uw_process_new(1, mods, 1, &skipped, why, sizeof(why));
	CHECK(p != NULL);
	CHECK_EQ_U64(skipped, 1);
	if (p)
		CHECK(uw_unwind(p, 1, s->regs, s->stack, s->stack_len, fr, UW_MAX_FRAMES, &end) >= 1);
	uw_process_free(p);
}

/* ---- through a trace -------------------------------------------------------- */

#define PID 777

static void synth_unwind(struct synth *sy, uint32_t dso_id, const uint8_t *img, size_t len)
{
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_unwind) + len));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_unwind r = { .dso_id = dso_id, .image_len = (uint32_t)len };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), img, len);
	synth_raw(sy->meta, buf, size, FR_REC_UNWIND, 0);
	free(buf);
}

static void synth_ustack(struct synth *sy, uint32_t stack_id, const uint64_t regs[17],
			 const uint8_t *stack, uint32_t stack_len, const struct fr_py_frame *py,
			 uint16_t n_py, uint16_t flags, uint32_t claim_stack_len, uint16_t claim_n_py)
{
	uint64_t kernel[2] = { 0xffffffff81000100ull, 0xffffffff81000200ull };
	size_t body = sizeof(kernel) + n_py * sizeof(*py) + stack_len;
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_ustack) + body));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_ustack r = { .stack_id = stack_id, .pid = PID, .tid = PID + 1, .n_kernel = 2,
				   .n_py = claim_n_py, .stack_len = claim_stack_len,
				   .flags = flags, .py_version = n_py ? 311 : 0 };
	memcpy(r.regs, regs, sizeof(r.regs));
	memcpy(buf, &r, sizeof(r));
	uint8_t *p = buf + sizeof(r);
	memcpy(p, kernel, sizeof(kernel));
	p += sizeof(kernel);
	if (n_py)
		memcpy(p, py, n_py * sizeof(*py));
	p += n_py * sizeof(*py);
	memcpy(p, stack, stack_len);
	synth_raw(sy->ev, buf, size, FR_REC_USTACK, 0);
	free(buf);
}

static void synth_pycode(struct synth *sy, uint64_t code, const char *qual, const char *file,
			 uint32_t first, const uint8_t *lt, uint32_t lt_len, uint32_t claim_lt)
{
	size_t ql = strlen(qual), fl = strlen(file);
	uint32_t size = FR_ALIGN8((uint32_t)(sizeof(struct fr_rec_pycode) + ql + fl + lt_len));
	uint8_t *buf = calloc(1, size);
	struct fr_rec_pycode r = { .code = code, .pid = PID, .firstlineno = first, .py_version = 311,
				   .qualname_len = (uint16_t)ql, .filename_len = (uint16_t)fl,
				   .linetable_len = claim_lt };
	memcpy(buf, &r, sizeof(r));
	memcpy(buf + sizeof(r), qual, ql);
	memcpy(buf + sizeof(r) + ql, file, fl);
	memcpy(buf + sizeof(r) + ql + fl, lt, lt_len);
	synth_raw(sy->meta, buf, size, FR_REC_PYCODE, 0);
	free(buf);
}

static void test_trace(const struct snap *s, const char *target_path, int n_distinct)
{
	char path[512];
	struct synth sy;
	synth_path("analyzer_unwind.frec", path, sizeof(path));
	CHECK_EQ_U64(synth_open(&sy, path), 0);
	synth_process(&sy, PID, 1, "unwind_target", "unwind_target snap");

	/* mappings (one dso per file), unwind images, the target's symbols */
	char *copy = strdup(s->maps);
	for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long lo, hi, off;
		char *slash = strchr(line, '/');
		if (!slash || sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
			continue;
		struct file_img *f = file_of(slash);
		uint32_t dso_id = f ? (uint32_t)(f - files) + 1 : 0;
		synth_mapping(&sy, PID, lo, hi, off, dso_id, slash);
	}
	free(copy);
	for (size_t i = 0; i < n_files; i++)
		if (files[i].reduced)
			synth_unwind(&sy, (uint32_t)i + 1, files[i].reduced, files[i].reduced_len);
	/* symbols: the target is PIE, its file offsets = vaddrs for .text here;
	 * derive the load base from main's runtime address and the mapping */
	struct file_img *tf = file_of(target_path);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)tf->bytes;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(tf->bytes + eh->e_phoff);
	uint64_t main_vaddr = 0;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(tf->bytes + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(tf->bytes + sh[i].sh_offset);
		const char *str = (const char *)tf->bytes + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (!strcmp(str + sym[k].st_name, "main"))
				main_vaddr = sym[k].st_value;
	}
	uint64_t base = s->fn[0] - main_vaddr, delta = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && main_vaddr >= ph[i].p_vaddr &&
		    main_vaddr < ph[i].p_vaddr + ph[i].p_memsz)
			delta = ph[i].p_vaddr - ph[i].p_offset;
	struct synth_sym syms[5] = {
		{ s->fn[0] - base - delta, (uint32_t)s->fn_size[0], "main" },
		{ s->fn[1] - base - delta, (uint32_t)s->fn_size[1], "level1" },
		{ s->fn[2] - base - delta, (uint32_t)s->fn_size[2], "level2" },
		{ s->fn[3] - base - delta, (uint32_t)s->fn_size[3], "level3" },
		{ 0, 1, "_PyEval_EvalFrameDefault" }, /* unused, keeps the merge honest */
	};
	synth_dso(&sy, (uint32_t)(tf - files) + 1, 0, target_path, syms, 4);

	/* Python: 2 frames of one activation (3.11 entry marker on the root one) */
	static const uint8_t lt[] = { 0x80 | 10 << 3 | 1, 0x80 | 11 << 3 | 1 };
	synth_pycode(&sy, 0xa000, "train_step", "/w/train.py", 10, lt, sizeof(lt), sizeof(lt));
	synth_pycode(&sy, 0xb000, "Model.forward", "/w/model.py", 20, lt, sizeof(lt), sizeof(lt));
	struct fr_py_frame py[2] = { { .code = 0xb000, .instr_off = 4, .fingerprint = 20 },
				     { .code = 0xa000, .instr_off = 0, .flags = FR_PYF_ENTRY, .fingerprint = 10 } };

	/* n_distinct stacks differing in rax only (unwinding ignores it), each
	 * sampled twice, under two stack ids each: all one canonical stack */
	uint64_t regs[17];
	memcpy(regs, s->regs, sizeof(regs));
	for (int i = 0; i < n_distinct; i++) {
		regs[0] = (uint64_t)i;
		synth_ustack(&sy, 1000 + 2 * (uint32_t)i, regs, s->stack, s->stack_len, NULL, 0, 0,
			     s->stack_len, 0);
		synth_ustack(&sy, 1001 + 2 * (uint32_t)i, regs, s->stack, s->stack_len, NULL, 0, 0,
			     s->stack_len, 0);
		synth_samples(&sy, PID, PID + 1, 1000 + 2 * (uint32_t)i, 1);
		synth_samples(&sy, PID, PID + 1, 1001 + 2 * (uint32_t)i, 1);
	}
	/* with Python frames: no interpreter frame natively -> root + [lost] */
	synth_ustack(&sy, 5, s->regs, s->stack, s->stack_len, py, 2, 0, s->stack_len, 2);
	synth_samples(&sy, PID, PID + 1, 5, 3);

	/* hostile records */
	synth_ustack(&sy, 6, s->regs, s->stack, 256, NULL, 0, 0, 1u << 30, 0); /* stack_len beyond */
	synth_ustack(&sy, 7, s->regs, s->stack, 256, py, 2, 0, 256, 60000);    /* n_py beyond */
	struct fr_py_frame many[70];
	for (int i = 0; i < 70; i++)
		many[i] = (struct fr_py_frame){ .code = 0xdead000 + (uint64_t)i, .instr_off = (uint32_t)i * 7,
						 .flags = (uint8_t)(i % 4) };
	synth_ustack(&sy, 8, s->regs, s->stack, 256, many, 70, 0, 256, 70);    /* n_py > 64, fits */
	uint64_t junk[17];
	for (int i = 0; i < 17; i++)
		junk[i] = 0x0123456789abcdefull * (uint64_t)(i + 3);
	synth_ustack(&sy, 9, junk, s->stack, 512, many, 3, 0, 512, 3);         /* garbage regs */
	synth_ustack(&sy, 0, s->regs, s->stack, 64, NULL, 0, 0, 64, 0);        /* id 0 */
	synth_samples(&sy, PID, PID + 1, 6, 1);
	synth_samples(&sy, PID, PID + 1, 8, 1);
	synth_samples(&sy, PID, PID + 1, 9, 1);
	static const uint8_t not_elf[64] = "MZ not an elf";
	synth_unwind(&sy, 99, not_elf, sizeof(not_elf));
	synth_pycode(&sy, 0xc000, "bad", "bad.py", 1, lt, sizeof(lt), 1u << 30);
	CHECK_EQ_U64(synth_close(&sy, 0, 0), 0);

	struct trace_set *ts;
	struct frec_error err;
	const char *paths[] = { path };
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	struct model_opts opts = { 0 };
	void *cpu = trace_set_add_model(ts, &model_cpu_ops, &opts);
	double t0 = now_s();
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	double dt = now_s() - t0;
	const struct trace_file *f = trace_set_file(ts, 0);
	printf("trace: %llu ustack records, %llu canonical stacks, decoded+unwound+symbolized+"
	       "merged in %.3f s: %.0f records/s (one core)\n",
	       (unsigned long long)f->dwarf_stats.records,
	       (unsigned long long)f->dwarf_stats.distinct, dt, f->dwarf_stats.records / dt);
	double resolve_s = (double)f->dwarf_stats.resolve_ns * 1e-9;
	printf("trace: of which unwinding, symbolizing, merging and interning %.3f s: %.0f "
	       "records/s (one core)\n", resolve_s, f->dwarf_stats.records / resolve_s);
	/* 2 n_distinct plain records + 5, 8, 9 (6, 7 and id 0 refused) */
	CHECK_EQ_U64(f->dwarf_stats.records, 2 * (uint64_t)n_distinct + 3);
	/* the plain ones collapse into one canonical stack; 5, 8, 9 are their own */
	CHECK_EQ_U64(f->dwarf_stats.distinct, 4);
	CHECK(f->ustack_ids.count == f->dwarf_stats.records);
	CHECK(f->n_stacks == 4); /* nothing per raw stack */
	CHECK(f->n_problems >= 5); /* 6, 7, 8 (clamped), id 0, not_elf, bad pycode */
	for (uint64_t i = 0; i < f->n_problems && i < TS_MAX_PROBLEMS_KEPT; i++)
		printf("  problem: %s\n", f->problems[i].what);

	const struct model_cpu_result *r = model_cpu_result(cpu);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	CHECK_EQ_U64(flame_write_folded(r->tree, mem), 0);
	fclose(mem);
	CHECK(strstr(text, ";main;level1;level2;level3;") != NULL);
	CHECK(strstr(text, "train_step (train.py:10);Model.forward (model.py:21);[lost];") != NULL);
	char want[64];
	snprintf(want, sizeof(want), " %d\n", 2 * n_distinct);
	CHECK(strstr(text, want) != NULL); /* every plain sample in one line */
	if (!strstr(text, ";main;level1;level2;level3;"))
		fputs(text, stderr);
	char *line = strstr(text, "train_step");
	if (line)
		printf("merged: %.*s\n", (int)strcspn(line, "\n"), line);
	free(text);
	trace_set_free(ts);
}

/* ---- merge rules on synthetic frames ------------------------------------------ */

static char *joined(const char **v, size_t n)
{
	static char buf[1024];
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		strcat(buf, i ? ";" : "");
		strcat(buf, v[i]);
	}
	return buf;
}

#define EV "_PyEval_EvalFrameDefault"

static void check_merge(const char *const *native, size_t n_native, int complete,
			const struct sm_py *py, size_t n_py, int cut, const char *want,
			enum sm_outcome want_how)
{
	const char *out[64];
	enum sm_outcome how;
	size_t n = stack_merge(native, n_native, complete, py, n_py, cut, SM_LOST, out, 64, &how);
	CHECK_STR(joined(out, n), want);
	CHECK_EQ_U64(how, want_how);
}

static void test_merge(void)
{
	CHECK(sm_is_eval_frame(EV));
	CHECK(sm_is_eval_frame(EV ".cold"));
	CHECK(!sm_is_eval_frame(EV "X"));
	CHECK(!sm_is_eval_frame("PyEval_EvalCode"));
	CHECK(!sm_is_eval_frame(NULL));

	/* native leaf first: cudaMalloc <- ffi_call <- EV <- PyEval_EvalCode <- EV <- main */
	const char *nat[] = { "cudaMalloc", "ffi_call", EV, "PyObject_Call", EV ".cold", "main" };
	/* 3.10: one frame per activation (every frame ENTRY) */
	const struct sm_py p310[] = { { "linear (m.py:3)", FR_PYF_ENTRY }, { "<module> (m.py:9)", FR_PYF_ENTRY } };
	check_merge(nat, 6, 1, p310, 2, 0,
		    "main;<module> (m.py:9);PyObject_Call;linear (m.py:3);ffi_call;cudaMalloc", SM_EXACT);
	/* 3.11: segments end at an ENTRY frame, inclusive */
	const struct sm_py p311[] = { { "linear", 0 }, { "forward", 0 }, { "step", FR_PYF_ENTRY },
				      { "<module>", FR_PYF_ENTRY } };
	check_merge(nat, 6, 1, p311, 4, 0,
		    "main;<module>;PyObject_Call;step;forward;linear;ffi_call;cudaMalloc", SM_EXACT);
	/* 3.12: segments end at a SHIM, which is not shown */
	const struct sm_py p312[] = { { "linear", 0 }, { "forward", 0 }, { "shim", FR_PYF_SHIM },
				      { "<module>", 0 }, { "shim", FR_PYF_SHIM } };
	check_merge(nat, 6, 1, p312, 5, 0,
		    "main;<module>;PyObject_Call;forward;linear;ffi_call;cudaMalloc", SM_EXACT);
	/* one extra interpreter frame at the leaf: kept as is */
	const char *nat_extra[] = { EV, "PyObject_Call", EV, "main" };
	const struct sm_py one[] = { { "<module>", FR_PYF_ENTRY } };
	check_merge(nat_extra, 4, 1, one, 1, 0, "main;<module>;PyObject_Call;" EV, SM_ONE_EXTRA);
	/* two extra: a mismatch, Python at the root, [lost], natives without EV */
	const char *nat_two[] = { EV, "x", EV, "y", EV, "main" };
	check_merge(nat_two, 6, 1, one, 1, 0, "<module>;[lost];main;y;x", SM_MISMATCH);
	/* no interpreter frame, unwinding stopped early: Python at the root */
	const char *nat_none[] = { "cudaMalloc", "ffi_call" };
	check_merge(nat_none, 2, 0, p311, 4, 0,
		    "<module>;step;forward;linear;[lost];ffi_call;cudaMalloc", SM_NATIVE_SHORT);
	/* native cut short with one interpreter frame: leaf segment in place */
	const char *nat_cut[] = { "cudaMalloc", EV, "PyObject_Call" };
	check_merge(nat_cut, 3, 0, p311, 4, 0,
		    "<module>;[lost];PyObject_Call;step;forward;linear;cudaMalloc", SM_NATIVE_SHORT);
	/* the same counts with a complete native stack: a mismatch */
	check_merge(nat_cut, 3, 1, p311, 4, 0,
		    "<module>;step;forward;linear;[lost];PyObject_Call;cudaMalloc", SM_MISMATCH);
	/* Python walk truncated: leftover interpreter frames become [lost] */
	check_merge(nat_two, 6, 1, one, 1, 1, "main;[lost];y;[lost];x;<module>", SM_PYTHON_SHORT);
	/* no Python frames: natives unchanged */
	check_merge(nat, 6, 1, NULL, 0, 0,
		    "main;" EV ".cold;PyObject_Call;" EV ";ffi_call;cudaMalloc", SM_NATIVE_ONLY);
	/* only shims: empty segments count as activations */
	const struct sm_py shims[] = { { NULL, FR_PYF_SHIM }, { "<module>", 0 }, { NULL, FR_PYF_SHIM } };
	const char *nat2[] = { EV, "PyObject_Call", EV };
	check_merge(nat2, 3, 1, shims, 3, 0, "<module>;PyObject_Call", SM_EXACT);
	/* small room: truncates at the leaf end, never overflows */
	const char *out[3];
	size_t n = stack_merge(nat, 6, 1, p311, 4, 0, SM_LOST, out, 3, NULL);
	CHECK_EQ_U64(n, 3);
	CHECK_STR(joined(out, n), "linear;ffi_call;cudaMalloc"); /* the root end goes */
}

#ifndef UNWIND_TEST_NO_MAIN /* test_analyzer_dwarf_memory.c reuses the helpers */
/* uw_unwind_traced: the copy with every byte and register it did not use
 * zeroed, and cut after the last byte it used (what the recorder writes as
 * a sparse copy), unwinds to the same frames, by the fast path and by
 * libdw alone; what it keeps is a few words per frame. */
static void test_traced(const struct snap *s)
{
	struct uw_module mods[64];
	struct uw_frame fr[UW_MAX_FRAMES], again[UW_MAX_FRAMES];
	enum uw_end end, end2;
	char why[160];
	size_t n_mods = modules_of(s, mods, 64, 1);
	struct uw_process *p = uw_process_new(4242, mods, n_mods, NULL, why, sizeof(why));
	CHECK(p != NULL);
	if (!p)
		return;
	uint8_t *map = malloc(s->stack_len);
	uint8_t *sparse = calloc(1, s->stack_len);
	struct uw_use use = { .read_map = map };
	size_t n = uw_unwind_traced(p, 4242, s->regs, s->stack, s->stack_len, &use, fr,
				    UW_MAX_FRAMES, &end);
	uint32_t regs_used = use.regs_used;
	check_chain(s, fr, n, "traced");
	CHECK_EQ_U64(end, UW_END_OUTERMOST);
	CHECK(use.complete);
	/* _start's CFI leaves the return address undefined: the recorder may
	 * take the thread's stack top from this walk */
	CHECK(use.end_by_cfi && !use.ran_off);
	CHECK(regs_used & 1u << 7 && regs_used & 1u << 16);
	size_t len = s->stack_len, kept = 0;
	while (len && !map[len - 1])
		len--;
	for (size_t i = 0; i < len; i++)
		if (map[i]) {
			sparse[i] = s->stack[i];
			kept++;
		}
	uint64_t regs[UW_NREGS];
	for (int i = 0; i < UW_NREGS; i++)
		regs[i] = regs_used & 1u << i ? s->regs[i] : 0;
	/* a return address a frame, a saved frame pointer at most besides */
	CHECK(kept % 8 == 0 && kept >= 8 * (n - 2) && kept <= 16 * n);
	CHECK(len < s->stack_len);
	printf("sparse copy: %zu frames, %zu of %zu bytes used, cut at %zu, registers %#x\n", n,
	       kept, (size_t)s->stack_len, len, regs_used);
	for (int fast = 1; fast >= 0; fast--) {
		uw_process_fast_path(p, fast, NULL, NULL);
		size_t n2 = uw_unwind(p, 4242, regs, sparse, len, again, UW_MAX_FRAMES, &end2);
		CHECK_EQ_U64(n2, n);
		CHECK_EQ_U64(end2, end);
		int same = n2 == n;
		for (size_t i = 0; same && i < n; i++)
			same = again[i].pc == fr[i].pc && again[i].activation == fr[i].activation;
		CHECK(same);
	}
	/* the copy cut short: the walk stops at a return address past its end,
	 * and a sparse copy of what it used stops there too */
	uw_process_fast_path(p, 1, NULL, NULL);
	size_t short_len = 64;
	size_t n_short = uw_unwind_traced(p, 4242, s->regs, s->stack, short_len, &use, fr,
					  UW_MAX_FRAMES, &end);
	CHECK_EQ_U64(end, UW_END_STOPPED);
	CHECK(use.complete && n_short >= 1 && n_short < n);
	CHECK(use.ran_off && !use.end_by_cfi);
	/* the leaf's return address read as zero (a stale word where registers
	 * caught mid-breakpoint point the walk): it ends there, as at an
	 * outermost frame, but not by the CFI's word */
	{
		uint8_t *zeroed = malloc(s->stack_len);
		memcpy(zeroed, s->stack, s->stack_len);
		size_t at = SIZE_MAX;
		for (size_t i = 0; i + 8 <= s->stack_len && at == SIZE_MAX; i += 8) {
			uint64_t w;
			memcpy(&w, zeroed + i, 8);
			if (w == fr[1].pc)
				at = i;
		}
		CHECK(at != SIZE_MAX);
		if (at != SIZE_MAX) {
			memset(zeroed + at, 0, 8);
			size_t n0 = uw_unwind_traced(p, 4242, s->regs, zeroed, s->stack_len, &use,
						     again, UW_MAX_FRAMES, &end2);
			CHECK_EQ_U64(n0, 1);
			CHECK_EQ_U64(end2, UW_END_OUTERMOST);
			CHECK(!use.end_by_cfi && !use.ran_off);
		}
		free(zeroed);
	}
	memset(sparse, 0, s->stack_len);
	len = short_len;
	while (len && !map[len - 1])
		len--;
	for (size_t i = 0; i < len; i++)
		sparse[i] = map[i] ? s->stack[i] : 0;
	CHECK_EQ_U64(uw_unwind(p, 4242, s->regs, sparse, len, again, UW_MAX_FRAMES, &end2),
		     n_short);
	CHECK_EQ_U64(end2, UW_END_STOPPED);
	for (size_t i = 0; i < n_short; i++)
		CHECK_EQ_U64(again[i].pc, fr[i].pc);
	/* libdw walks with every register: all of them count as used */
	uw_process_fast_path(p, 0, NULL, NULL);
	uw_unwind_traced(p, 4242, s->regs, s->stack, s->stack_len, &use, fr, UW_MAX_FRAMES, &end);
	CHECK_EQ_U64(use.regs_used, (1u << UW_NREGS) - 1);
	free(map);
	free(sparse);
	uw_process_free(p);
}

int main(void)
{
	test_merge();
#if !defined(__x86_64__)
	printf("skipped: x86-64 only\n");
	return check_finish() ? 1 : 77;
#else
	struct snap s;
	char target[512];
	memset(&s, 0, sizeof(s));
	if (take_snapshot(&s, target, sizeof(target))) {
		/* built with this test: not running it is a failure */
		fprintf(stderr, "FAIL: could not run %s\n", UNWIND_TARGET);
		return 1;
	}
	CHECK(s.fn_size[0] && s.fn_size[3]);
	test_process(&s);
	test_traced(&s);
#if defined(__SANITIZE_ADDRESS__)
	test_trace(&s, target, 300); /* sanitizers make libdw ~20x slower */
#else
	test_trace(&s, target, 5000);
#endif
	free(s.stack);
	free(s.maps);
	for (size_t i = 0; i < n_files; i++) {
		free(files[i].bytes);
		free(files[i].reduced);
	}
	return check_finish();
#endif
}
#endif /* UNWIND_TEST_NO_MAIN */
