/* Small helpers the subcommands share: option matching without global
 * state (tests call commands repeatedly), and human-readable numbers.  Not
 * for output formats of their own: each cmd_*.c owns its layout. */
#ifndef FLIGHTREC_CLI_H
#define FLIGHTREC_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "frec_error.h"

#include "out_common.h" /* the formats every output shares: out_bytes ... */

#define CLI_PROG OUT_PROG

/* Exit statuses shared by every command. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Matches argv[*i] against "--name VALUE", "--name=VALUE" or (short_name
 * non-NULL) "-x VALUE".  Returns 1 with *value set (and *i advanced past a
 * separate value), 0 when argv[*i] is another argument, -1 when the value is
 * missing (a message is printed to errout). */
int cli_option(int argc, char **argv, int *i, const char *name, const char *short_name,
	       const char **value, const char *cmd, FILE *errout);

/* True for --help and -h. */
int cli_is_help(const char *arg);
/* text (one paragraph) wrapped at 76 columns, indented by two spaces (help
 * texts). */
void cli_print_wrapped(FILE *out, const char *text);

/* Parses a pid (decimal, 1..UINT32_MAX); 0 on success. */
int cli_parse_pid(const char *s, uint32_t *pid);

/* "--pid PID" as cli_option matches it: 1 with *pid and *filter set, 0 when
 * argv[*i] is another argument, -1 after a usage message. */
int cli_pid_option(int argc, char **argv, int *i, const char *cmd, uint32_t *pid, int *filter,
		   FILE *errout);

/* "--name N" with N a decimal in [min, max]; returns as cli_pid_option. */
int cli_uint_option(int argc, char **argv, int *i, const char *name, const char *cmd,
		    unsigned min, unsigned max, unsigned *n, FILE *errout);

/* The arguments of a command that turns traces into one output file. */
struct cli_file_output {
	const char **files;
	size_t n_files;
	const char *output;
	int force;
	unsigned flags;  /* bit i: the command's flag i was given (cli_file_spec) */
};

/* What cli_parse_file_spec accepts beyond "FILE... -o OUT". */
struct cli_file_spec {
	const char *cmd;
	const char *help;             /* printed by --help, or: */
	void (*print_help)(FILE *out); /* when help is NULL */
	const char *out_name;         /* OUT in the usage line */
	int allow_force;              /* --force */
	const char *const *flags;     /* more flags without a value, NULL-terminated */
};

/* Parses "FILE... -o OUT" (and --force when allow_force) for cmd, whose
 * usage line names OUT as out_name.  CLI_OK with *a filled (free a->files),
 * -1 after printing help, CLI_USAGE or CLI_FAIL after a message. */
int cli_parse_file_output(int argc, char **argv, const char *cmd, const char *help,
			  const char *out_name, int allow_force, struct cli_file_output *a,
			  FILE *out, FILE *errout);

/* The same with a spec: flags set bits of a->flags. */
int cli_parse_file_spec(int argc, char **argv, const struct cli_file_spec *spec,
			struct cli_file_output *a, FILE *out, FILE *errout);


/* Prints "flightrec-analyze: FILE: offset N: WHAT" for err. */
void cli_print_error(FILE *errout, const struct frec_error *err);

/* A table command's arguments: FILE... [--json] and what its spec adds. */
struct cli_table_args {
	const char **files;
	size_t n_files;
	int json;
	int filter_pid;
	uint32_t pid;
	unsigned number;    /* spec->number_name's value, or its default */
	int flag;           /* spec->flag_name was given */
};

/* The options a table command takes beyond FILE... and --json. */
struct cli_table_spec {
	const char *cmd;
	const char *help;
	const char *usage;           /* what follows cmd in the usage line; NULL: "FILE..." */
	int takes_pid;               /* --pid PID */
	const char *number_name;     /* e.g. "--top"; NULL for none */
	unsigned number_min, number_max, number_default;
	const char *flag_name;       /* e.g. "--step-marker-less"; NULL for none */
};

/* Parses a table command's arguments.  CLI_OK with *a filled (free
 * a->files), -1 after printing help, CLI_USAGE or CLI_FAIL after a
 * message. */
int cli_parse_table_args(int argc, char **argv, const struct cli_table_spec *spec,
			 struct cli_table_args *a, FILE *out, FILE *errout);

/* Opens the trace files (and archives of them) as one set, with one
 * warning line per archive member skipped; NULL after printing the
 * error's one line to errout. */
struct trace_set;
struct trace_set *cli_open(const char *const *files, size_t n, FILE *errout);
/* The warning lines of what opening the set skipped (archive members). */
void cli_warn_skipped(const struct trace_set *ts, FILE *errout);

/* The common start of a one-model command: open the files and ask for the
 * model named model (and so the models it needs; its state in *state).
 * NULL after printing one line to errout. */
struct model_opts;
struct trace_set *cli_open_with_model(const char *cmd, const char *const *files, size_t n,
				      const char *model, const struct model_opts *mo,
				      void **state, FILE *errout);
/* The pass over the files; warns about damaged or incomplete ones.  On
 * failure prints one line, frees ts and returns CLI_FAIL. */
int cli_run_set(struct trace_set *ts, FILE *errout);

/* One warning line on errout per file that is damaged or incomplete. */
void cli_warn_troubled(struct trace_set *ts, FILE *errout);

/* Where a command that writes one file writes it: standard output for
 * "-", else PATH created (or truncated). */
struct cli_dest {
	FILE *f;
	const char *path;
	int is_file;
};

/* Opens d for path; CLI_OK, or CLI_FAIL after "PATH: cannot create: ...". */
int cli_dest_open(struct cli_dest *d, const char *path, FILE *out, FILE *errout);
/* Closes d given the command's status rc so far, and returns the final one:
 * a close that fails turns CLI_OK into CLI_FAIL after "PATH: write failed:
 * ..." (a failure before that has been reported by the caller); any
 * status but CLI_OK removes the file. */
int cli_dest_close(struct cli_dest *d, int rc, FILE *errout);

#endif
