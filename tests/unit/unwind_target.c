/* Helper of test_analyzer_unwind (not a test itself): a program built with
 * -O2 -fomit-frame-pointer whose call chain main -> level1 -> level2 ->
 * level3 stops inside libc (raise), where a signal handler takes what the
 * recorder's BPF side takes at a sample: the interrupted user registers and
 * the top of the user stack from rsp upward.  It writes them, the addresses
 * of its four functions and its /proc/self/maps to the file named by
 * argv[1], so the test can unwind them after this process has exited,
 * without ptrace or privileges.
 *
 * Snapshot layout (native endian): "FRUWSNAP", u64 regs[17] (DWARF order
 * rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip), u64 main, level1, level2,
 * level3, u32 stack_len, u32 maps_len, stack bytes, maps text. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#define COPY_MAX 16384
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static const char *out_path;
static volatile int sink;
/* test_analyzer_redact's secret, where the stack copy surely reaches it */
static const char *volatile secret_seen;

int level1(int x);
int level2(int x);
int level3(int x);
int main(int argc, char **argv);

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	const greg_t *g = ((ucontext_t *)ctx)->uc_mcontext.gregs;
	uint64_t regs[17] = {
		(uint64_t)g[REG_RAX], (uint64_t)g[REG_RDX], (uint64_t)g[REG_RCX],
		(uint64_t)g[REG_RBX], (uint64_t)g[REG_RSI], (uint64_t)g[REG_RDI],
		(uint64_t)g[REG_RBP], (uint64_t)g[REG_RSP], (uint64_t)g[REG_R8],
		(uint64_t)g[REG_R9], (uint64_t)g[REG_R10], (uint64_t)g[REG_R11],
		(uint64_t)g[REG_R12], (uint64_t)g[REG_R13], (uint64_t)g[REG_R14],
		(uint64_t)g[REG_R15], (uint64_t)g[REG_RIP],
	};
	static char maps[1 << 16];
	FILE *m = fopen("/proc/self/maps", "r");
	size_t maps_len = m ? fread(maps, 1, sizeof(maps), m) : 0;
	if (m)
		fclose(m);
	/* copy up to COPY_MAX bytes, not past the end of the stack mapping */
	uint64_t sp = regs[7], stack_end = sp + COPY_MAX;
	for (char *line = maps; line < maps + maps_len;) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo && sp < hi && hi < stack_end)
			stack_end = hi;
		char *nl = memchr(line, '\n', (size_t)(maps + maps_len - line));
		line = nl ? nl + 1 : maps + maps_len;
	}
	uint32_t stack_len = (uint32_t)(stack_end - sp);
	uint64_t fns[4] = { (uint64_t)(uintptr_t)main, (uint64_t)(uintptr_t)level1,
			    (uint64_t)(uintptr_t)level2, (uint64_t)(uintptr_t)level3 };
	uint32_t lens[2] = { stack_len, (uint32_t)maps_len };
	FILE *out = fopen(out_path, "wb");
	if (!out)
		_exit(3);
	fwrite("FRUWSNAP", 1, 8, out);
	fwrite(regs, 8, 17, out);
	fwrite(fns, 8, 4, out);
	fwrite(lens, 4, 2, out);
	fwrite((const void *)(uintptr_t)sp, 1, stack_len, out);
	fwrite(maps, 1, maps_len, out);
	_exit(fclose(out) ? 4 : 0);
}

NOINLINE int level3(int x)
{
	raise(SIGUSR1); /* the handler exits the process */
	return sink + x;
}

NOINLINE int level2(int x)
{
	int r = level3(x + 1);
	return r * 3 + sink;
}

NOINLINE int level1(int x)
{
	int r = level2(x * 2);
	return r ^ sink;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: unwind_target SNAPSHOT\n");
		return 2;
	}
	out_path = argv[1];
	/* REDACT_TEST_SECRET copied into main's own frame: the environment lies
	 * at the top of the stack, often past the copy's 16 KiB, while main's
	 * frame is always inside it, so test_analyzer_redact's secret always
	 * reaches the trace it redacts */
	char secret[128] = "";
	const char *env = getenv("REDACT_TEST_SECRET");
	if (env)
		snprintf(secret, sizeof(secret), "%s", env);
	secret_seen = secret;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	int r = level1(argc);
	return r == 12345 ? 1 : 5;
}
