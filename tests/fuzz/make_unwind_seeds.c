/* Writes the seeds of fuzz_unwind (fuzz_unwind.h) at build time, never
 * committed as binaries: this program, built -O2 -fomit-frame-pointer, spins
 * in main -> level1 -> level2 -> level3 while a SIGPROF timer interrupts it;
 * each interruption keeps the registers and the top of the stack, as the
 * recorder's BPF side does at a CPU sample.  A seed holds that stack, the
 * mappings of this executable and its reduced image as the recorder makes
 * it (unwind_reduced_image), so the fuzzer starts from a stack that unwinds
 * through four frames of real CFI.  Usage: make_unwind_seeds DIR. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fuzz_unwind.h"
#include "symbols/unwind_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define SEEDS 3
#define COPY_MAX 4096

static uint64_t stack_lo, stack_hi; /* the stack mapping, read before the timer */
static struct snap { uint64_t regs[17]; uint32_t len; uint8_t bytes[COPY_MAX]; } snaps[SEEDS];
static volatile int n_snaps;
static volatile uint64_t sink;

__attribute__((no_sanitize("address")))
static void on_prof(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	if (n_snaps >= SEEDS)
		return;
	const greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	struct snap *s = &snaps[n_snaps];
	static const int order[17] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
				       REG_RBP, REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11,
				       REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP };
	for (int i = 0; i < 17; i++)
		s->regs[i] = (uint64_t)g[order[i]];
	uint64_t sp = s->regs[7], end = sp + COPY_MAX;
	if (sp < stack_lo || sp >= stack_hi)
		return;
	if (end > stack_hi)
		end = stack_hi;
	s->len = (uint32_t)(end - sp);
	const volatile uint8_t *from = (const volatile uint8_t *)(uintptr_t)sp;
	for (uint32_t i = 0; i < s->len; i++)
		s->bytes[i] = from[i];
	n_snaps++;
}

NOINLINE int level3(int x)
{
	/* spin here until every seed is taken (or about 3 s of CPU) */
	uint64_t v = (uint64_t)x;
	for (long i = 0; n_snaps < SEEDS && i < 3000000000L; i++)
		v = v * 6364136223846793005ull + 1442695040888963407ull;
	sink = v;
	return (int)(v & 7);
}

NOINLINE int level2(int x)
{
	int r = level3(x + 1);
	sink += (uint64_t)r;
	return r + 1;
}

NOINLINE int level1(int x)
{
	int r = level2(x * 3);
	sink += (uint64_t)r;
	return r + 2;
}

struct map_line { uint64_t start, end, pgoff; };

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_unwind_seeds DIR\n");
		return 2;
	}
	char exe[4096];
	ssize_t exe_len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (exe_len <= 0)
		return 1;
	exe[exe_len] = '\0';
	/* this executable's mappings, and the stack's */
	struct map_line maps[FUZZ_UNWIND_MAX_MODS];
	int n_maps = 0;
	uint64_t here = (uint64_t)(uintptr_t)&exe;
	FILE *m = fopen("/proc/self/maps", "r");
	char line[4600];
	while (m && fgets(line, sizeof(line), m)) {
		unsigned long long lo, hi, off;
		char *path = strchr(line, '/');
		if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) != 3)
			continue;
		if (here >= lo && here < hi)
			stack_lo = lo, stack_hi = hi;
		if (path) {
			path[strcspn(path, "\n")] = '\0';
			if (!strcmp(path, exe) && n_maps < FUZZ_UNWIND_MAX_MODS)
				maps[n_maps++] = (struct map_line){ lo, hi, off };
		}
	}
	if (m)
		fclose(m);
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	size_t image_len = 0;
	uint8_t *image = fd >= 0 ? unwind_reduced_image(fd, &image_len) : NULL;
	if (fd >= 0)
		close(fd);
	if (!image || !n_maps || !stack_hi) {
		fprintf(stderr, "make_unwind_seeds: no image, mappings or stack of %s\n", exe);
		return 1;
	}

	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	sink += (uint64_t)level1(argc);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);

	for (int k = 0; k < n_snaps; k++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/stack-%d", argv[1], k);
		FILE *out = fopen(path, "wb");
		if (!out)
			return 1;
		struct fuzz_unwind_hdr h = { .stack_len = snaps[k].len, .n_images = 1,
					     .n_mods = (uint8_t)n_maps };
		memcpy(h.regs, snaps[k].regs, sizeof(h.regs));
		uint32_t len32 = (uint32_t)image_len;
		fwrite(&h, sizeof(h), 1, out);
		fwrite(&len32, 4, 1, out);
		for (int i = 0; i < n_maps; i++) {
			struct fuzz_unwind_mod fm = { maps[i].start, maps[i].end, maps[i].pgoff, 0, { 0 } };
			fwrite(&fm, sizeof(fm), 1, out);
		}
		fwrite(image, 1, image_len, out);
		fwrite(snaps[k].bytes, 1, snaps[k].len, out);
		if (fclose(out))
			return 1;
	}
	free(image);
	printf("make_unwind_seeds: %d stacks, image %zu bytes, %d mappings\n", n_snaps,
	       image_len, n_maps);
	return n_snaps ? 0 : 1;
}
