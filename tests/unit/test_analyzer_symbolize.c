/* The symbolizer alone: overlapping mappings (latest record wins), per-pid
 * address spaces, file offsets for unresolved ips, C++ demangling, kernel
 * frames, and the cache returning the same interned name. */
#include "check.h"
#include "test_analyzer_synth.h"

#include "symbolize.h"
#include "trace_set.h"

#define SYM(ts, pid, ip) symbolize_ip(sym, 0, (pid), (ip))

int main(void)
{
	char path[512];
	synth_path("analyzer_symbolize.frec", path, sizeof(path));
	struct synth s;
	CHECK_EQ_U64(synth_open(&s, path), 0);
	synth_mapping(&s, 300, 0x1000, 0x3000, 0, 0, "/lib/a.so");
	synth_mapping(&s, 300, 0x2000, 0x4000, 0, 0, "/lib/b.so");
	synth_mapping(&s, 300, 0x5000, 0x9000, 0, 0, "/lib/c.so");
	synth_mapping(&s, 300, 0x6000, 0x7000, 0, 0, "/lib/d.so");
	synth_mapping(&s, 300, 0x5000, 0x6800, 0, 0, "/lib/e.so");
	synth_mapping(&s, 300, 0xa000, 0xb000, 0, 0, "");
	synth_mapping(&s, 300, 0x100000, 0x200000, 0x3000, 9, "/usr/lib/libcpp.so.6");
	synth_mapping(&s, 301, 0x1000, 0x2000, 0, 0, "x");
	static const struct synth_sym cpp_syms[] = {
		{ 0x3100, 0x10, "_ZN3foo3barEv" },
		{ 0x3200, 0x10, "_ZN2ns5ClassC2Ei" },
		{ 0x3300, 0x10, "_Zbogus" },
		{ 0x3400, 0, "plain_c" },
	};
	synth_dso(&s, 9, 0, "/usr/lib/libcpp.so.6", cpp_syms, 4);
	CHECK_EQ_U64(synth_close(&s, 0, 0), 0);

	struct trace_set *ts;
	struct frec_error err;
	const char *paths[] = { path };
	CHECK_EQ_U64(trace_set_open(paths, 1, &ts, &err), 0);
	CHECK_EQ_U64(trace_set_run(ts, &err), 0);
	struct symbolizer *sym = trace_set_symbolizer(ts, &err);
	CHECK(sym != NULL);

	/* A then B overlapping: B (later) wins where they overlap. */
	CHECK_STR(SYM(ts, 300, 0x1500), "a.so+0x500");
	CHECK_STR(SYM(ts, 300, 0x2500), "b.so+0x500");
	CHECK_STR(SYM(ts, 300, 0x3500), "b.so+0x1500");
	CHECK_STR(SYM(ts, 300, 0x4500), "[unknown]");
	/* C, then D inside it, then E over C's start and half of D. */
	CHECK_STR(SYM(ts, 300, 0x5500), "e.so+0x500");
	CHECK_STR(SYM(ts, 300, 0x6500), "e.so+0x1500");
	CHECK_STR(SYM(ts, 300, 0x6900), "d.so+0x900");
	CHECK_STR(SYM(ts, 300, 0x7500), "c.so+0x2500");
	CHECK_STR(SYM(ts, 300, 0x8fff), "c.so+0x3fff");
	CHECK_STR(SYM(ts, 300, 0x9000), "[unknown]");
	CHECK_STR(SYM(ts, 300, 0xa500), "[unknown]"); /* anonymous: no name to give */
	/* Address spaces are per pid. */
	CHECK_STR(SYM(ts, 301, 0x1500), "x+0x500");
	CHECK_STR(SYM(ts, 301, 0x2500), "[unknown]");
	CHECK_STR(SYM(ts, 302, 0x1500), "[unknown]");
	/* ip -> file offset through pgoff; C++ demangled; size 0 runs on. */
	CHECK_STR(SYM(ts, 300, 0x100104), "foo::bar()");
	CHECK_STR(SYM(ts, 300, 0x100204), "ns::Class::Class(int)");
	CHECK_STR(SYM(ts, 300, 0x100304), "_Zbogus");
	CHECK_STR(SYM(ts, 300, 0x100310), "libcpp.so.6+0x3310");
	CHECK_STR(SYM(ts, 300, 0x100480), "plain_c");
	CHECK_STR(SYM(ts, 300, 0x100000), "libcpp.so.6+0x3000");
	/* No kernel symbol table in this file. */
	CHECK_STR(SYM(ts, 300, 0xffffffff81000000ull), "[unknown]_[k]");
	/* Out-of-range file index. */
	CHECK_STR(symbolize_ip(sym, 7, 300, 0x1500), "[unknown]");
	/* Cached and interned: the same pointer twice. */
	CHECK(SYM(ts, 300, 0x100104) == SYM(ts, 300, 0x100104));
	CHECK(SYM(ts, 300, 0x100104) == SYM(ts, 300, 0x100108));

	trace_set_free(ts);
	return check_finish();
}
