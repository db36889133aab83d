/* `flightrec-analyze summary` laid out: the whole recording in a bounded
 * number of tokens, as Markdown or JSON, from the same model results the
 * other commands print (findings, cpu, mem, stragglers, rdma) and the
 * files' own counters (probes, losses, damage).  Not an analysis: every
 * number here is a number some other command prints too; this file only
 * chooses, trims and orders.
 *
 * Token rule: tokens = ceil(bytes / 4).  Bytes rather than words because
 * the output is mostly numbers, symbols and paths, where word counts
 * undercount (a C++ frame is one "word" and a dozen tokens); four bytes a
 * token is what BPE tokenizers average on English and code. */
#ifndef FLIGHTREC_OUT_SUMMARY_H
#define FLIGHTREC_OUT_SUMMARY_H

#include <stddef.h>
#include <stdio.h>

#define SUMMARY_MAX_TOKENS 2000
#define SUMMARY_BYTES_PER_TOKEN 4
#define SUMMARY_MAX_BYTES (SUMMARY_MAX_TOKENS * SUMMARY_BYTES_PER_TOKEN)

struct trace_set;
struct findings_result;
struct model_cpu_result;
struct mem_result;
struct stragglers_result;
struct rdma_result;

/* What the summary reads; results of a finished pass over ts. */
struct summary_input {
	struct trace_set *ts;
	const struct findings_result *findings;
	const struct model_cpu_result *cpu;
	const struct mem_result *mem;
	const struct stragglers_result *stragglers;
	const struct rdma_result *rdma;
};

enum summary_format { SUMMARY_MD, SUMMARY_JSON };

/* How much of each section is written.  Level 0 is everything the
 * summary shows; each level after it drops lower-priority lines
 * (SUMMARY_LEVELS in out_summary.c: CPU stacks beyond 3, then holders,
 * ...).  The last level is bounded by construction. */
size_t summary_levels(void);

/* Writes the summary at level to out; 0, or -1 when memory runs out. */
int summary_write(const struct summary_input *in, enum summary_format fmt, size_t level,
		  FILE *out);

/* tokens of a text of len bytes, by the rule above */
static inline size_t summary_tokens(size_t len)
{
	return (len + SUMMARY_BYTES_PER_TOKEN - 1) / SUMMARY_BYTES_PER_TOKEN;
}

#endif
