/* Private to the HTML report writer (out_report.c and the out_report_*.c
 * section files): the sections, in the order the page lists them, and the
 * JSON pieces more than one section writes.  Nothing else includes this;
 * the report's API is out_report.h.
 *
 * Each section writes one member of the page's data object, "name":value,
 * from one model's result (or from report_data, out_report_data.c); value
 * is null when there is nothing to show, and the page then says why.  The
 * ones that allocate return 0 or -ENOMEM; write errors are left in the
 * stream's error flag for out_report_write to check once at the end. */
#ifndef FLIGHTREC_OUT_REPORT_SECTIONS_H
#define FLIGHTREC_OUT_REPORT_SECTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "flame_tree.h"

struct out_report_input;
struct report_data;
struct trace_file;
struct trace_set;

/* out_report_summary.c: the files, their drops and damage, the processes */
void report_section_summary(FILE *f, struct trace_set *ts);
/* out_report_findings.c: what to fix first (model_findings), as
 * `findings --json` writes it */
void report_section_findings(FILE *f, const void *findings_model);
/* out_report_cpu.c: CPU flame graphs, all processes and the busiest each */
int report_section_cpu(FILE *f, struct trace_set *ts, const struct report_data *d);
/* out_report_mem.c: GPU memory (model_mem and its snapshot states) */
int report_section_mem(FILE *f, struct trace_set *ts, const struct out_report_input *in);
/* out_report_cuda.c: the CUDA API table and copies (model_cuda) */
int report_section_cuda(FILE *f, struct trace_set *ts, const struct report_data *d,
			const void *cuda_model, const void *cuda_time_model);
/* out_report_stragglers.c: verdict and heatmaps (model_stragglers) */
int report_section_stragglers(FILE *f, struct trace_set *ts, const void *model);
/* out_report_rdma.c: connections, latency, counters (model_rdma) */
void report_section_rdma(FILE *f, const void *model);
/* out_report_syscalls.c: the costliest system calls (model_syscalls) */
int report_section_syscalls(FILE *f, struct trace_set *ts, const void *model);
/* out_report_summary.c: events per family, for the empty sections' notes */
void report_section_presence(FILE *f, const struct report_data *d);

/* out_report_common.c */

/* "rank R: comm (pid P) on host", the rank part only when known. */
void report_process_label(char *buf, size_t len, const struct trace_file *f, uint32_t pid);
/* One stack as a JSON string: its 12 innermost frames, leaf first,
 * joined by " <- " (mem_stack_line). */
void report_stack_json(FILE *f, struct trace_set *ts, uint32_t file, uint32_t stack_id);
/* A flame graph as the renderer's JSON (flame_write_json) on one line,
 * at most max_nodes frames.  0 or -ENOMEM. */
int report_flame_json(FILE *f, const struct flame_tree *t, const char *title, const char *subtitle,
		      const char *unit, size_t max_nodes);

#endif
