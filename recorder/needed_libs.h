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

#endif
