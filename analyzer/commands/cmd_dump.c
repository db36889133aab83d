/* `flightrec-analyze dump`: every event of the traces as one JSON object per
 * line, stacks symbolized (like `perf script`, for scripts and tests).
 * Two passes: the first (trace_set_run) collects the metadata and symbol
 * tables, which the recorder writes at the end of a file; the second reads
 * the events again and prints them, one at a time (memory stays bounded). */
#include "cli.h"
#include "out_common.h"
#include "model_cuda.h"
#include "commands.h"
#include "symbolize.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
	"  --type LIST   only these event types: cpu_sample, syscall, proc_fork,\n"
	"                proc_exec, proc_exit, cuda, nccl, rdma_ctrl, rdma_post,\n"
	"                rdma_cqe, step (comma separated)\n"
	"  --pid PID     only events of process PID\n"
	"  --no-stacks   leave out the stacks (faster)\n"
	"\n"
	"examples:\n"
	"  " CLI_PROG " dump run.frec --type syscall | jq 'select(.name==\"fsync\")'\n"
	"  " CLI_PROG " dump run.frec --pid 4242 --no-stacks > events.jsonl\n";

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

static void print_event(FILE *out, const struct dump_args *a, struct symbolizer *sym,
			const struct trace_file *f, uint32_t file_index,
			const struct fr_rec_hdr *rec, const char ***frames, size_t *cap)
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
	if (rec->type == FR_EV_CPU_SAMPLE && rec->size >= sizeof(struct fr_ev_cpu_sample)) {
		struct fr_ev_cpu_sample e;
		memcpy(&e, rec, sizeof(e));
		fprintf(out, ",\"cpu\":%u", e.cpu);
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else if (rec->type == FR_EV_SYSCALL && rec->size >= sizeof(struct fr_ev_syscall)) {
		struct fr_ev_syscall e;
		memcpy(&e, rec, sizeof(e));
		const char *sc = syscall_name(e.nr);
		fputs(",\"name\":", out);
		if (sc)
			out_json_str(out, sc);
		else
			fprintf(out, "\"syscall_%u\"", e.nr);
		fprintf(out, ",\"nr\":%u,\"ret\":%" PRId64 ",\"duration_ns\":%" PRIu64, e.nr, e.ret,
			e.duration_ns);
		if (e.sc_flags & FR_SYSCALL_HAS_FD)
			fprintf(out, ",\"fd\":%" PRId64, e.fd);
		if (e.sc_flags & FR_SYSCALL_HAS_BYTES)
			fprintf(out, ",\"bytes\":%" PRIu64, e.count);
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else if (rec->type >= FR_EV_PROC_FORK && rec->type <= FR_EV_PROC_EXIT &&
		   rec->size >= sizeof(struct fr_ev_proc)) {
		struct fr_ev_proc e;
		char comm[17] = {0};
		memcpy(&e, rec, sizeof(e));
		memcpy(comm, e.comm, 16);
		fprintf(out, ",\"ppid\":%u", e.ppid);
		if (rec->type == FR_EV_PROC_EXIT)
			fprintf(out, ",\"exit_code\":%d", e.exit_code);
		fputs(",\"comm\":", out);
		out_json_str(out, comm);
	} else if (rec->type == FR_EV_CUDA && rec->size >= sizeof(struct fr_ev_cuda)) {
		struct fr_ev_cuda e;
		memcpy(&e, rec, sizeof(e));
		const char *name = cuda_func_name(e.func); /* NULL: a func it does not know */
		fputs(",\"name\":", out);
		out_json_str(out, name ? name : "?");
		fprintf(out, ",\"func\":%u,\"flags\":%u,\"result\":%" PRId64 ",\"duration_ns\":%" PRIu64
			",\"ptr\":%" PRIu64 ",\"src\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"stream\":%" PRIu64
			",\"kind\":%u,\"device\":%d", e.func, e.flags, e.result, e.duration_ns, e.ptr, e.src,
			e.bytes, e.stream, e.kind, e.device);
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else if (rec->type == FR_EV_NCCL && rec->size >= sizeof(struct fr_ev_nccl)) {
		static const char *const names[] = {"?", "ncclAllReduce", "ncclReduceScatter",
			"ncclAllGather", "ncclBroadcast", "ncclReduce", "ncclSend", "ncclRecv",
			"ncclGroupStart", "ncclGroupEnd", "ncclCommInitRank", "ncclCommInitRankConfig",
			"ncclCommInitAll", "ncclCommSplit", "ncclCommDestroy"};
		struct fr_ev_nccl e;
		memcpy(&e, rec, sizeof(e));
		fputs(",\"name\":", out);
		out_json_str(out, e.func < sizeof(names) / sizeof(names[0]) ? names[e.func] : "?");
		fprintf(out, ",\"func\":%u,\"result\":%" PRId64 ",\"duration_ns\":%" PRIu64 ",\"comm\":%" PRIu64
			",\"count\":%" PRIu64 ",\"datatype\":%u,\"op\":%u,\"peer\":%d,\"rank\":%d,\"nranks\":%d"
			",\"stream\":%" PRIu64 ",\"uid_hash\":%" PRIu64, e.func, e.result, e.duration_ns, e.comm,
			e.count, e.datatype, e.op, e.peer, e.rank, e.nranks, e.stream, e.uid_hash);
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else if (rec->type == FR_EV_RDMA_CTRL && rec->size >= sizeof(struct fr_ev_rdma_ctrl)) {
		static const char *const names[] = {"?", "ibv_open_device", "ibv_create_qp",
			"ibv_modify_qp", "ibv_destroy_qp", "ibv_reg_mr", "ibv_dereg_mr", "ibv_create_cq",
			"ibv_reg_dmabuf_mr", "ibv_create_qp_ex", "ops"};
		struct fr_ev_rdma_ctrl e;
		memcpy(&e, rec, sizeof(e));
		fputs(",\"name\":", out);
		out_json_str(out, e.func < sizeof(names) / sizeof(names[0]) ? names[e.func] : "?");
		fprintf(out, ",\"func\":%u,\"result\":%" PRId64 ",\"duration_ns\":%" PRIu64 ",\"ptr\":%" PRIu64
			",\"obj\":%" PRIu64 ",\"qp_num\":%u,\"dest_qp_num\":%u,\"qp_state\":%u,\"path_mtu\":%u"
			",\"dlid\":%u,\"addr\":%" PRIu64 ",\"length\":%" PRIu64 ",\"lkey\":%u,\"rkey\":%u",
			e.func, e.result, e.duration_ns, e.ptr, e.obj, e.qp_num, e.dest_qp_num, e.qp_state,
			e.path_mtu, e.dlid, e.addr, e.length, e.lkey, e.rkey);
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else if (rec->type == FR_EV_RDMA_POST && rec->size >= sizeof(struct fr_ev_rdma_post)) {
		struct fr_ev_rdma_post e;
		memcpy(&e, rec, sizeof(e));
		fprintf(out, ",\"wr_id\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"qp_num\":%u,\"opcode\":%u"
			",\"num_sge\":%u,\"flags\":%u,\"wr_index\":%u,\"result\":%d", e.wr_id, e.bytes,
			e.qp_num, e.opcode, e.num_sge, e.flags, e.wr_index, e.result);
	} else if (rec->type == FR_EV_RDMA_CQE && rec->size >= sizeof(struct fr_ev_rdma_cqe)) {
		struct fr_ev_rdma_cqe e;
		memcpy(&e, rec, sizeof(e));
		fprintf(out, ",\"wr_id\":%" PRIu64 ",\"status\":%u,\"opcode\":%u,\"byte_len\":%u"
			",\"qp_num\":%u,\"src_qp\":%u,\"vendor_err\":%u", e.wr_id, e.status, e.opcode,
			e.byte_len, e.qp_num, e.src_qp, e.vendor_err);
	} else if (rec->type == FR_EV_STEP && rec->size >= sizeof(struct fr_ev_step)) {
		struct fr_ev_step e;
		memcpy(&e, rec, sizeof(e));
		if (a->stacks)
			print_stack(out, sym, f, file_index, e.stack_id, frames, cap);
	} else {
		fprintf(out, ",\"size\":%u", rec->size);
	}
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

	if (frec_open(f->path, &r, &err)) {
		cli_print_error(errout, &err);
		return CLI_FAIL;
	}
	while ((rc = frec_next_chunk(r, &chunk, &err)) == 1) {
		if (chunk.hdr.chunk_type != FR_CHUNK_EVENTS)
			continue;
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &chunk, &cursor, &rec) == 1) {
			struct fr_rec_hdr h;
			memcpy(&h, rec, sizeof(h));
			if (h.type < 0x100)
				print_event(out, a, sym, f, file_index, rec, &frames, &cap);
		}
	}
	free(frames);
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
			fputs(dump_help, out);
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

	struct trace_set *ts;
	struct frec_error err = {0};
	if (trace_set_open(a.files, a.n_files, &ts, &err)) {
		cli_print_error(errout, &err);
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
