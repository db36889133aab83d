/* Shared helpers of the subcommands; see cli.h. */
#include "cli.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_option(int argc, char **argv, int *i, const char *name, const char *short_name,
	       const char **value, const char *cmd, FILE *errout)
{
	const char *arg = argv[*i];
	size_t len = strlen(name);
	if (strncmp(arg, name, len) == 0 && arg[len] == '=') {
		*value = arg + len + 1;
		return 1;
	}
	if (strcmp(arg, name) != 0 && !(short_name && strcmp(arg, short_name) == 0))
		return 0;
	if (*i + 1 >= argc) {
		fprintf(errout, CLI_PROG " %s: option %s needs a value (see '" CLI_PROG " %s --help')\n",
			cmd, arg, cmd);
		return -1;
	}
	*value = argv[++*i];
	return 1;
}

int cli_is_help(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int cli_parse_pid(const char *s, uint32_t *pid)
{
	if (!s[0] || s[0] == '-' || s[0] == '+')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v == 0 || v > UINT32_MAX)
		return -1;
	*pid = (uint32_t)v;
	return 0;
}

int cli_pid_option(int argc, char **argv, int *i, const char *cmd, uint32_t *pid, int *filter,
		   FILE *errout)
{
	const char *value = NULL;
	int m = cli_option(argc, argv, i, "--pid", NULL, &value, cmd, errout);
	if (m <= 0)
		return m;
	if (cli_parse_pid(value, pid)) {
		fprintf(errout, CLI_PROG " %s: --pid '%s' is not a process id (a positive decimal number)\n",
			cmd, value);
		return -1;
	}
	*filter = 1;
	return 1;
}

int cli_uint_option(int argc, char **argv, int *i, const char *name, const char *cmd,
		    unsigned min, unsigned max, unsigned *n, FILE *errout)
{
	const char *value = NULL;
	int m = cli_option(argc, argv, i, name, NULL, &value, cmd, errout);
	if (m <= 0)
		return m;
	char *end;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (end == value || *end || errno || value[0] == '-' || v < min || v > max) {
		fprintf(errout, CLI_PROG " %s: %s '%s' is not a number from %u to %u\n", cmd, name, value,
			min, max);
		return -1;
	}
	*n = (unsigned)v;
	return 1;
}

int cli_parse_file_spec(int argc, char **argv, const struct cli_file_spec *spec,
			struct cli_file_output *a, FILE *out, FILE *errout)
{
	const char *cmd = spec->cmd;
	*a = (struct cli_file_output){ .files = calloc((size_t)argc + 1, sizeof(*a->files)) };
	if (!a->files) {
		fprintf(errout, CLI_PROG " %s: out of memory\n", cmd);
		return CLI_FAIL;
	}
	int only_files = 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *value = NULL;
		int m, flag = -1;
		for (int k = 0; spec->flags && spec->flags[k] && flag < 0; k++)
			if (!strcmp(arg, spec->flags[k]))
				flag = k;
		if (only_files || arg[0] != '-' || !arg[1]) {
			a->files[a->n_files++] = arg;
		} else if (strcmp(arg, "--") == 0) {
			only_files = 1;
		} else if (cli_is_help(arg)) {
			if (spec->help)
				fputs(spec->help, out);
			else
				spec->print_help(out);
			free(a->files);
			return -1;
		} else if (spec->allow_force && strcmp(arg, "--force") == 0) {
			a->force = 1;
		} else if (flag >= 0) {
			a->flags |= 1u << flag;
		} else if ((m = cli_option(argc, argv, &i, "--output", "-o", &value, cmd, errout))) {
			if (m < 0)
				goto usage;
			a->output = value;
		} else {
			fprintf(errout, CLI_PROG " %s: unknown option '%s' (see '" CLI_PROG " %s --help')\n",
				cmd, arg, cmd);
			goto usage;
		}
	}
	if (a->n_files && a->output)
		return CLI_OK;
	fprintf(errout, CLI_PROG " %s: %s (usage: " CLI_PROG " %s FILE... -o %s)\n", cmd,
		!a->n_files ? "no trace file given" : "no output given", cmd, spec->out_name);
usage:
	free(a->files);
	a->files = NULL;
	return CLI_USAGE;
}

int cli_parse_file_output(int argc, char **argv, const char *cmd, const char *help,
			  const char *out_name, int allow_force, struct cli_file_output *a,
			  FILE *out, FILE *errout)
{
	struct cli_file_spec spec = { .cmd = cmd, .help = help, .out_name = out_name,
				      .allow_force = allow_force };
	return cli_parse_file_spec(argc, argv, &spec, a, out, errout);
}

int cli_parse_table_args(int argc, char **argv, const struct cli_table_spec *spec,
			 struct cli_table_args *a, FILE *out, FILE *errout)
{
	const char *cmd = spec->cmd;
	*a = (struct cli_table_args){ .files = calloc((size_t)argc + 1, sizeof(*a->files)),
				      .number = spec->number_default };
	if (!a->files) {
		fprintf(errout, CLI_PROG " %s: out of memory\n", cmd);
		return CLI_FAIL;
	}
	int only_files = 0;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		int m;
		if (only_files || arg[0] != '-' || !arg[1]) {
			a->files[a->n_files++] = arg;
		} else if (strcmp(arg, "--") == 0) {
			only_files = 1;
		} else if (cli_is_help(arg)) {
			fputs(spec->help, out);
			free(a->files);
			return -1;
		} else if (strcmp(arg, "--json") == 0) {
			a->json = 1;
		} else if (spec->flag_name && strcmp(arg, spec->flag_name) == 0) {
			a->flag = 1;
		} else if (spec->takes_pid &&
			   (m = cli_pid_option(argc, argv, &i, cmd, &a->pid, &a->filter_pid, errout))) {
			if (m < 0)
				goto usage;
		} else if (spec->number_name &&
			   (m = cli_uint_option(argc, argv, &i, spec->number_name, cmd, spec->number_min,
						spec->number_max, &a->number, errout))) {
			if (m < 0)
				goto usage;
		} else {
			fprintf(errout, CLI_PROG " %s: unknown option '%s' (see '" CLI_PROG " %s --help')\n",
				cmd, arg, cmd);
			goto usage;
		}
	}
	if (a->n_files)
		return CLI_OK;
	fprintf(errout, CLI_PROG " %s: no trace file given (usage: " CLI_PROG " %s %s)\n", cmd, cmd,
		spec->usage ? spec->usage : "FILE...");
usage:
	free(a->files);
	a->files = NULL;
	return CLI_USAGE;
}

void cli_print_error(FILE *errout, const struct frec_error *err)
{
	char buf[600];
	if (!strcmp(err->where, CLI_PROG) && err->offset < 0) /* not about a file */
		fprintf(errout, CLI_PROG ": %s\n", err->what);
	else
		fprintf(errout, CLI_PROG ": %s\n", frec_error_str(err, buf, sizeof(buf)));
}

struct trace_set *cli_open(const char *const *files, size_t n, FILE *errout)
{
	struct frec_error err = { .offset = -1 };
	struct trace_set *ts;
	if (trace_set_open(files, n, &ts, &err)) {
		cli_print_error(errout, &err);
		return NULL;
	}
	cli_warn_skipped(ts, errout);
	return ts;
}

struct trace_set *cli_open_with_model(const char *cmd, const char *const *files, size_t n,
				      const char *model, const struct model_opts *mo,
				      void **state, FILE *errout)
{
	struct trace_set *ts = cli_open(files, n, errout);
	if (!ts)
		return NULL;
	*state = trace_set_use_model(ts, model, mo);
	if (!*state) {
		fprintf(errout, CLI_PROG " %s: out of memory\n", cmd);
		trace_set_free(ts);
		return NULL;
	}
	return ts;
}

void cli_warn_skipped(const struct trace_set *ts, FILE *errout)
{
	for (size_t i = 0; i < trace_set_warning_count(ts); i++)
		fprintf(errout, CLI_PROG ": warning: %s\n", trace_set_warning(ts, i));
}

void cli_warn_troubled(struct trace_set *ts, FILE *errout)
{
	for (size_t i = 0; i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		char stop[160];
		if (!trace_file_damaged(f) && trace_file_complete(f) &&
		    !trace_file_stopped(f, stop, sizeof(stop)))
			continue;
		char trouble[512];
		/* an archive member: check takes the archive */
		int check_len = f->member_at ? (int)(f->member_at - 1) : (int)strlen(f->path);
		fprintf(errout, CLI_PROG ": warning: %s: %s; analyzing what it holds "
			"(details: " CLI_PROG " check %.*s)\n", f->path,
			trace_file_trouble(f, trouble, sizeof(trouble)), check_len, f->path);
	}
}

int cli_run_set(struct trace_set *ts, FILE *errout)
{
	struct frec_error err = { .offset = -1 };
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		trace_set_free(ts);
		return CLI_FAIL;
	}
	cli_warn_troubled(ts, errout);
	return CLI_OK;
}

int cli_dest_open(struct cli_dest *d, const char *path, FILE *out, FILE *errout)
{
	*d = (struct cli_dest){ .f = out, .path = path, .is_file = strcmp(path, "-") != 0 };
	if (d->is_file && !(d->f = fopen(path, "w"))) {
		fprintf(errout, CLI_PROG ": %s: cannot create: %s\n", path, strerror(errno));
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cli_dest_close(struct cli_dest *d, int rc, FILE *errout)
{
	if (!d->is_file)
		return rc;
	if (fclose(d->f) && rc == CLI_OK) {
		fprintf(errout, CLI_PROG ": %s: write failed: %s\n", d->path, strerror(errno));
		rc = CLI_FAIL;
	}
	if (rc != CLI_OK)
		unlink(d->path);
	return rc;
}

void cli_print_wrapped(FILE *out, const char *text)
{
	const char *p = text;
	while (*p) {
		size_t len = strlen(p), cut = len;
		if (len > 74) {
			cut = 74;
			while (cut && p[cut] != ' ')
				cut--;
			if (!cut)
				cut = strcspn(p, " ");
		}
		fprintf(out, "  %.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}
