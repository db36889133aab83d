/* The subcommands of flightrec-analyze.  Each takes its argv (argv[0] is the
 * command name), writes results to out and diagnostics to errout, and
 * returns the exit status; none calls exit(), so tests drive them directly.
 * main.c only dispatches. */
#ifndef FLIGHTREC_COMMANDS_H
#define FLIGHTREC_COMMANDS_H

#include <stdio.h>

int cmd_info(int argc, char **argv, FILE *out, FILE *errout);
int cmd_check(int argc, char **argv, FILE *out, FILE *errout);
int cmd_flame(int argc, char **argv, FILE *out, FILE *errout);
int cmd_dump(int argc, char **argv, FILE *out, FILE *errout);
int cmd_rdma(int argc, char **argv, FILE *out, FILE *errout);
int cmd_memory(int argc, char **argv, FILE *out, FILE *errout);
int cmd_cuda(int argc, char **argv, FILE *out, FILE *errout);
int cmd_sqlite(int argc, char **argv, FILE *out, FILE *errout);
int cmd_timeline(int argc, char **argv, FILE *out, FILE *errout);
int cmd_report(int argc, char **argv, FILE *out, FILE *errout);
int cmd_stragglers(int argc, char **argv, FILE *out, FILE *errout);
int cmd_archive(int argc, char **argv, FILE *out, FILE *errout);
int cmd_findings(int argc, char **argv, FILE *out, FILE *errout);
int cmd_summary(int argc, char **argv, FILE *out, FILE *errout);
int cmd_explain(int argc, char **argv, FILE *out, FILE *errout);
int cmd_diff(int argc, char **argv, FILE *out, FILE *errout);
/* export clickhouse (analyzer/export/ holds the writer) */
int cmd_export(int argc, char **argv, FILE *out, FILE *errout);
/* in analyzer/mcp/ (it runs the commands above) */
int cmd_mcp(int argc, char **argv, FILE *out, FILE *errout);


#endif
