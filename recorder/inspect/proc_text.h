/* The recorder's parsers of what /proc says about a traced process, as
 * bytes: the launcher variables kept from /proc/PID/environ, and the
 * fields of /proc/PID/stat and /proc/PID/status the process record holds.
 * The process writes much of it (its environment, its comm, which may hold
 * spaces, parentheses and newlines), so every reader here stays within the
 * length it is given and needs no terminating NUL.  No I/O: proc_track.c
 * reads the files; tests/fuzz/fuzz_recorder_proc.c feeds these arbitrary
 * bytes. */
#ifndef FLIGHTREC_PROC_TEXT_H
#define FLIGHTREC_PROC_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A kept variable's text is cut at this many bytes. */
#define PROC_ENV_VALUE_MAX 512

/* Copies the launcher variables (RANK=, WORLD_SIZE=, ... see proc_text.c)
 * among env[0..len) (NUL-separated "KEY=value" strings, the last one maybe
 * unterminated) into out[0..cap), each NUL-terminated, whole or not at all.
 * The bytes written. */
size_t proc_env_keep(const char *env, size_t len, char *out, size_t cap);

struct proc_stat_fields {
	char comm[16];            /* NUL-terminated, at most 15 bytes */
	uint32_t ppid;
	bool has_ppid;
	uint64_t start_ticks;     /* field 22, clock ticks after boot */
	bool has_start;
};
/* Parses /proc/PID/stat's buf[0..len); 0, or -1 when there is no "(comm)". */
int proc_stat_parse(const char *buf, size_t len, struct proc_stat_fields *out);

/* The last (innermost namespace's) pid of the NSpid: line of
 * /proc/PID/status in buf[0..len); 0 when none. */
uint32_t proc_status_nspid(const char *buf, size_t len);

/* The cgroup path a process is in, from /proc/PID/cgroup (len bytes): the
 * cgroup v2 line's ("0::/kubepods.slice/..."), else on a v1-only host the
 * name=systemd hierarchy's, else the first line's.  Copied to out (cap
 * bytes, NUL-terminated, cut there); returns its length, 0 when none. */
size_t proc_cgroup_path(const char *text, size_t len, char *out, size_t cap);

#endif
