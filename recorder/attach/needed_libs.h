/* The shared libraries a program will load at start-up (its DT_NEEDED
 * closure), found the way the dynamic linker searches: DT_RPATH,
 * LD_LIBRARY_PATH, DT_RUNPATH ($ORIGIN expanded), /etc/ld.so.conf.d and the
 * default directories.  Used to attach library probes before `-- COMMAND`
 * runs, so calls made at start-up are not missed.  Libraries loaded later
 * with dlopen are found from the mappings instead. */
#ifndef FLIGHTREC_NEEDED_LIBS_H
#define FLIGHTREC_NEEDED_LIBS_H

#include <stddef.h>

/* Calls fn(path, ctx) for the program (resolved through PATH) and every
 * library in its closure, each once.  Returns the number of files, -1 when
 * the program cannot be found. */
int needed_libs_walk(const char *program, void (*fn)(const char *path, void *ctx), void *ctx);

/* What the closure walk reads from one file (exposed for tests and the
 * fuzzer): its first SHT_DYNAMIC section's DT_NEEDED names (at most
 * NEEDED_MAX; names of PATH_MAX bytes or more are skipped, no library has
 * one), DT_RPATH and DT_RUNPATH (NULL when absent or as long). */
#define NEEDED_MAX 128
struct needed_dynamic {
	char *needed[NEEDED_MAX];
	int n_needed;
	char *rpath, *runpath;
};

/* 0, or -1 when fd is not a readable ELF file; *out is filled either way
 * and is freed with needed_dynamic_free. */
int needed_read_dynamic(int fd, struct needed_dynamic *out);
void needed_dynamic_free(struct needed_dynamic *d);

#endif
