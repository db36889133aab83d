/* `flightrec-analyze dump`: every event of the traces as one JSON object per
 * line, stacks symbolized (like `perf script`, for scripts and tests).
 * Two passes: the first (trace_set_run) collects the metadata and symbol
 * tables, which the recorder writes at the end of a file; the second reads
 * the events again and prints them, one at a time (memory stays bounded). */
#include "cli.h"
#include "out_common.h"
#include "fr_family.h"
#include "fr_fields.h"
#include "commands.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char dump_help[] =
	"usage: " CLI_PROG " dump FILE... [--type NAME[,NAME...]] [--pid PID] [--no-stacks]\n"
	"\n"
	"Print every event as one JSON object per line (JSON Lines), in file order:\n"
	"  {\"file\":0,\"type\":\"syscall\",\"ts_ns\":..,\"t_s\":..,\"pid\":..,\"tid\":..,\n"
	"   \"name\":\"write\",\"nr\":1,\"ret\":4096,\"duration_ns\":..,\"fd\":3,\"bytes\":4096,\n"
	"   \"stack\":[\"main\",\"save\",\"write\"]}\n"
	"t_s counts from the start of the recording; stacks are root first.\n"
	"\n"
	"options:\n"
	"  --type LIST   only these event types (comma separated):\n"
	"%s"
	"  --pid PID     only events of process PID\n"
	"  --no-stacks   leave out the stacks (faster)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " dump run.frec --type syscall | jq 'select(.name==\"fsync\")'\n"
	"  " CLI_PROG " dump run.frec --pid 4242 --no-stacks > events.jsonl\n";

/* The help, with the event types of every probe family. */
static void print_help(FILE *out)
{
	char types[512];
	size_t at = 0, line = 0, n;
	const struct fr_family *const *fams = fr_families(&n);
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < fams[i]->n_records && at < sizeof(types) - 40; r++) {
			const char *name = fams[i]->records[r].name;
			if (!line || line + strlen(name) > 60) {
				at += (size_t)snprintf(types + at, sizeof(types) - at, "%s                ",
						       line ? "\n" : "");
				line = 16;
			}
			at += (size_t)snprintf(types + at, sizeof(types) - at, "%s ", name);
			line += strlen(name) + 1;
		}
	snprintf(types + at, sizeof(types) - at, "\n");
	fprintf(out, dump_help, types);
}

struct dump_args {
	const char **files;
	size_t n_files;
	const char *types;
	int filter_pid;
	uint32_t pid;
	int stacks;
};

static int type_wanted(const char *list, const char *name)
{
	if (!list)
		return 1;
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
			return 1;
	return 0;
}

static void print_stack(FILE *out, struct symbolizer *sym, const struct trace_file *f,
			uint32_t file_index, uint32_t stack_id, const char ***frames, size_t *cap)
{
	const struct ts_stack *st = stack_id ? trace_file_stack(f, stack_id) : NULL;
	if (!st)
		return;
	size_t n = (size_t)st->n_kernel + st->n_user;
	if (n > *cap) {
		const char **grown = realloc(*frames, n * sizeof(*grown));
		if (!grown)
			return;
		*frames = grown;
		*cap = n;
	}
	symbolize_stack(sym, f, file_index, st, *frames);
	fputs(",\"stack\":[", out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		out_json_str(out, (*frames)[i] ? (*frames)[i] : "[unknown]");
	}
	fputc(']', out);
}

/* The printable layout of the event types this build knows, parsed once
 * from their descriptors (bpf/families/). */
struct event_layout {
	int n; /* -1: not parsed yet or unknown; fields then print as "size" */
	struct fr_field f[FR_FIELDS_MAX];
	const struct fr_family *family;
};

static const struct event_layout *layout_of(struct event_layout *cache, uint16_t type)
{
	struct event_layout *l = &cache[type];
	if (l->n == 0 && !l->family) {
		const struct fr_family_record *r = fr_family_record(type);
		l->family = fr_family_of_record(type);
		l->n = r ? fr_fields_parse(r->desc, l->f, FR_FIELDS_MAX) : -1;
	}
	return l->n > 0 ? l : NULL;
}

/* A syscall's fd and byte count mean something only when its flags say so;
 * its number gets its name. */
static int syscall_field(FILE *out, const struct fr_rec_hdr *rec, const struct event_layout *l,
			 const struct fr_field *f)
{
	const struct fr_field *flags = fr_field_find(l->f, l->n, "sc_flags");
	uint64_t fl = flags ? fr_field_u64(rec, flags) : 0;
	if (!strcmp(f->name, "nr")) {
		uint32_t nr = (uint32_t)fr_field_u64(rec, f);
		const char *sc = syscall_name(nr);
		fputs(",\"name\":", out);
		if (sc)
			out_json_str(out, sc);
		else
			fprintf(out, "\"syscall_%u\"", nr);
		return 0;
	}
	if (!strcmp(f->name, "fd"))
		return fl & FR_SYSCALL_HAS_FD ? 0 : 1;
	if (!strcmp(f->name, "count")) {
		if (fl & FR_SYSCALL_HAS_BYTES)
			fprintf(out, ",\"bytes\":%" PRIu64, fr_field_u64(rec, f));
		return 1;
	}
	return !strcmp(f->name, "sc_flags");
}

static void print_field(FILE *out, const struct fr_rec_hdr *rec, const struct fr_field *f)
{
	const uint8_t *at = (const uint8_t *)rec + f->offset;
	fputs(",", out);
	out_json_str(out, f->name);
	fputc(':', out);
	switch (f->kind) {
	case FR_FIELD_UNSIGNED:
		fprintf(out, "%" PRIu64, fr_field_u64(rec, f));
		break;
	case FR_FIELD_SIGNED:
		fprintf(out, "%" PRId64, fr_field_s64(rec, f));
		break;
	case FR_FIELD_CHARS: {
		char s[4097];
		size_t n = strnlen((const char *)at, f->size);
		memcpy(s, at, n);
		s[n] = 0;
		out_json_str(out, s);
		break;
	}
	case FR_FIELD_BYTES:
		fputc('"', out);
		for (uint32_t i = 0; i < f->size; i++)
			fprintf(out, "%02x", at[i]);
		fputc('"', out);
		break;
	case FR_FIELD_ARRAY:
		fputc('[', out);
		for (uint32_t i = 0; i < f->size / f->elem; i++) {
			struct fr_field e = { .kind = FR_FIELD_UNSIGNED, .offset = f->offset + i * f->elem,
					      .size = f->elem, .elem = f->elem };
			fprintf(out, "%s%" PRIu64, i ? "," : "", fr_field_u64(rec, &e));
		}
		fputc(']', out);
		break;
	case FR_FIELD_VAR:
		break;
	}
}

/* One event: the common fields, then every field its descriptor lists
 * (padding left out; a function id also by name), the stack last. */
static void print_event(FILE *out, const struct dump_args *a, struct symbolizer *sym,
			const struct trace_file *f, uint32_t file_index,
			const struct fr_rec_hdr *rec, const char ***frames, size_t *cap,
			struct event_layout *cache)
{
	struct fr_ev_common c;
	const char *name = trace_file_type_name(f, rec->type);
	char unknown[32];

	if (rec->size < sizeof(c))
		return;
	memcpy(&c, rec, sizeof(c));
	if (a->filter_pid && c.pid != a->pid)
		return;
	if (!name) {
		snprintf(unknown, sizeof(unknown), "type_%u", rec->type);
		name = unknown;
	}
	if (!type_wanted(a->types, name))
		return;
	double t_s = c.ts_ns >= f->hdr.start_mono_ns ? (c.ts_ns - f->hdr.start_mono_ns) / 1e9 :
			-((double)(f->hdr.start_mono_ns - c.ts_ns) / 1e9);
	fprintf(out, "{\"file\":%u,\"type\":", file_index);
	out_json_str(out, name);
	fprintf(out, ",\"ts_ns\":%" PRIu64 ",\"t_s\":%.9f,\"pid\":%u,\"tid\":%u", c.ts_ns, t_s,
		c.pid, c.tid);
	const struct event_layout *l = layout_of(cache, rec->type);
	const struct fr_field *fixed_end = l ? &l->f[l->n - 1] : NULL;
	if (!l || rec->size < fixed_end->offset + fixed_end->size) {
		fprintf(out, ",\"size\":%u}\n", rec->size);
		return;
	}
	uint32_t stack_id = 0;
	for (int i = 0; i < l->n; i++) {
		const struct fr_field *fl = &l->f[i];
		if (fl->offset < sizeof(c) || fl->name[0] == '_' || fl->kind == FR_FIELD_VAR)
			continue;
		if (!strcmp(fl->name, "stack_id")) {
			stack_id = (uint32_t)fr_field_u64(rec, fl);
			continue;
		}
		if (rec->type == FR_EV_SYSCALL && syscall_field(out, rec, l, fl))
			continue;
		if (!strcmp(fl->name, "func")) {
			const struct fr_family_func *fn =
				fr_family_func(l->family, (uint16_t)fr_field_u64(rec, fl));
			fputs(",\"name\":", out);
			out_json_str(out, fn ? fn->name : "?");
		}
		print_field(out, rec, fl);
	}
	if (a->stacks && stack_id)
		print_stack(out, sym, f, file_index, stack_id, frames, cap);
	fputs("}\n", out);
}

/* The second pass over one file: events only. */
static int dump_file(FILE *out, FILE *errout, const struct dump_args *a,
		     struct symbolizer *sym, const struct trace_file *f, uint32_t file_index)
{
	struct frec_reader *r;
	struct frec_error err = {0};
	struct frec_chunk chunk;
	const char **frames = NULL;
	size_t cap = 0;
	int rc;
	struct event_layout *cache = calloc(0x100, sizeof(*cache));

	if (!cache) {
		fprintf(errout, CLI_PROG " dump: out of memory\n");
		return CLI_FAIL;
	}
	/* the trace file again, or an archive member's anonymous copy */
	int fd = trace_file_fd(f);
	if (fd < 0) {
		free(cache);
		fprintf(errout, CLI_PROG ": %s: cannot open again: %s\n", f->path, strerror(errno));
		return CLI_FAIL;
	}
	rc = frec_open_fd(fd, f->path, &r, &err);
	close(fd);
	if (rc) {
		free(cache);
		cli_print_error(errout, &err);
		return CLI_FAIL;
	}
	while ((rc = frec_next_chunk(r, &chunk, &err)) == 1) {
		/* events are in EVENTS chunks, and a few the recorder writes
		 * itself (fds open before it attached) in META chunks */
		if (chunk.hdr.chunk_type != FR_CHUNK_EVENTS && chunk.hdr.chunk_type != FR_CHUNK_META)
			continue;
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &chunk, &cursor, &rec) == 1) {
			struct fr_rec_hdr h;
			memcpy(&h, rec, sizeof(h));
			if (h.type < 0x100)
				print_event(out, a, sym, f, file_index, rec, &frames, &cap, cache);
		}
	}
	free(frames);
	free(cache);
	frec_close(r);
	if (rc < 0) {
		cli_print_error(errout, &err);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int cmd_dump(int argc, char **argv, FILE *out, FILE *errout)
{
	struct dump_args a = { .stacks = 1 };
	int only_files = 0, status = CLI_OK;
	const char *v;

	a.files = calloc((size_t)argc + 1, sizeof(*a.files));
	if (!a.files)
		return CLI_FAIL;
	for (int i = 1; i < argc; i++) {
		int m;
		if (!only_files && cli_is_help(argv[i])) {
			print_help(out);
			free(a.files);
			return CLI_OK;
		}
		if (!only_files && strcmp(argv[i], "--") == 0) {
			only_files = 1;
		} else if (!only_files && strcmp(argv[i], "--no-stacks") == 0) {
			a.stacks = 0;
		} else if (!only_files && (m = cli_option(argc, argv, &i, "--type", NULL, &v, "dump", errout))) {
			if (m < 0)
				goto usage;
			a.types = v;
		} else if (!only_files && (m = cli_pid_option(argc, argv, &i, "dump", &a.pid, &a.filter_pid, errout))) {
			if (m < 0)
				goto usage;
		} else if (!only_files && argv[i][0] == '-' && argv[i][1]) {
			fprintf(errout, CLI_PROG " dump: unknown option '%s' (see --help)\n", argv[i]);
			goto usage;
		} else {
			a.files[a.n_files++] = argv[i];
		}
	}
	if (!a.n_files) {
		fprintf(errout, CLI_PROG " dump: no trace file given (see --help)\n");
		goto usage;
	}

	struct frec_error err = {0};
	struct trace_set *ts = cli_open(a.files, a.n_files, errout);
	if (!ts) {
		free(a.files);
		return CLI_FAIL;
	}
	if (trace_set_run(ts, &err)) {
		cli_print_error(errout, &err);
		trace_set_free(ts);
		free(a.files);
		return CLI_FAIL;
	}
	cli_warn_troubled(ts, errout);
	struct symbolizer *sym = a.stacks ? trace_set_symbolizer(ts, &err) : NULL;
	if (a.stacks && !sym) {
		cli_print_error(errout, &err);
		status = CLI_FAIL;
	}
	for (size_t i = 0; i < trace_set_count(ts) && status == CLI_OK; i++)
		status = dump_file(out, errout, &a, sym, trace_set_file(ts, i), (uint32_t)i);
	trace_set_free(ts);
	free(a.files);
	return status;
usage:
	free(a.files);
	return CLI_USAGE;
}
