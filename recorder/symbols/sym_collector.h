/* Symbol tables for the trace, written while recording: every new stack's
 * addresses are resolved (mapping -> file -> function symbol) on the tracking
 * thread, and every second the symbols first needed since the last second go
 * into FR_REC_DSO records.  So a trace whose recorder was killed still
 * symbolizes everything up to its last second, and the analyzer never needs
 * the node's files.  Only symbols covering recorded addresses are written
 * (compact), so several DSO records may describe one file.
 *
 * Return addresses point after the call, so both ip and ip-1 are covered. */
#ifndef FLIGHTREC_SYM_COLLECTOR_H
#define FLIGHTREC_SYM_COLLECTOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbols/dso_table.h"
#include "frec_writer.h"

#define KERNEL_DSO_ID 0xffffffffu

struct sym_file; /* per DSO state */

struct pending_stack {
	uint32_t pid;
	uint16_t n_kernel, n_user;
	uint32_t tries;  /* flushes that could not resolve it */
	uint64_t *ips; /* kernel leaf first, then user leaf first (owned) */
};

struct sym_collector {
	struct dso_table *dsos;
	struct sym_file *files; /* index dso_id; grown on demand */
	uint32_t n_files;
	struct sym_file *kernel;
	pthread_t kernel_loader; /* sym_collector_kernel_preload's */
	bool kernel_loading;

	/* stacks handed over by the drain thread */
	pthread_mutex_t lock;
	struct pending_stack *queue;
	size_t n_queue, cap_queue;
	/* stacks whose mapping was not known yet: retried */
	struct pending_stack *retry;
	size_t n_retry, cap_retry;

	uint32_t dso_records;
	uint64_t symbols_written;
	uint32_t files_unreadable;
};

void sym_collector_init(struct sym_collector *c, struct dso_table *dsos);
void sym_collector_destroy(struct sym_collector *c);

/* Reads the kernel's symbols (/proc/kallsyms) on a thread of its own, while
 * the caller loads the BPF programs: most of its 70 ms is the kernel
 * formatting the file, and read at the first kernel frame it took a CPU
 * beside the job as the job started.  sym_collector_kernel_wait joins it;
 * before any stack is resolved (the tracking thread's start). */
void sym_collector_kernel_preload(struct sym_collector *c);
void sym_collector_kernel_wait(struct sym_collector *c);

/* Drain thread: a stack was seen for the first time (copies ips). */
void sym_collector_push(struct sym_collector *c, uint32_t pid, const uint64_t *kernel_ips,
			uint16_t n_kernel, const uint64_t *user_ips, uint16_t n_user);

/* Tracking thread: resolve queued stacks and write DSO records for symbols
 * not written yet.  final: also give up on stacks whose mapping is unknown. */
void sym_collector_flush(struct sym_collector *c, struct frec_builder *b, bool final);

#endif
