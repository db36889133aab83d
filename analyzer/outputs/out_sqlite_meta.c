/* The SQLite output's metadata tables, written once at finish from what
 * the trace set decoded: enum_* (names of the numbers stored in event
 * rows), hosts and files, processes and threads, drops, drop_reasons and
 * damaged_regions; stacks and frames through sq_write_stacks
 * (out_sqlite_stacks.c).
 *
 * Not for events (out_sqlite_events.c) nor model results
 * (out_sqlite_models.c); times here take the final clock offsets like
 * every row. */
#include "proc_identity.h"
#include "out_sqlite_impl.h"
#include "fr_family.h"
#include "cuda_funcs.h"
#include "model_mem.h"
#include "out_common.h"
#include "syscall_names.h"
#include "trace_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An (id, name) enum table: every id from first below limit that has a
 * name; when dense, the first id without one ends the table. */
static int write_enum(struct out_sqlite *o, const char *table_sql, const char *(*name_of)(uint32_t),
		      uint32_t first, uint32_t limit, int dense)
{
	sqlite3_stmt *st = sq_prep(o, table_sql);
	int rc = st ? 0 : -1;
	for (uint32_t id = first; st && !rc && id < limit; id++) {
		const char *name = name_of(id);
		if (!name) {
			if (dense)
				break;
			continue;
		}
		bi(st, 1, id);
		bt(st, 2, name);
		rc = sq_put(o, st);
	}
	sqlite3_finalize(st);
	return rc;
}

/* A function table of a probe family (enum_cuda_funcs, enum_nccl_funcs,
 * enum_rdma_funcs), from its descriptor, with the table's third column. */
static const char *cuda_mem_op(enum fr_func_class c)
{
	switch (c) {
	case FR_FN_ALLOC: case FR_FN_PHYS_ALLOC: case FR_FN_HOST_ALLOC:
		return "alloc";
	case FR_FN_FREE: case FR_FN_PHYS_FREE: case FR_FN_HOST_FREE:
		return "free";
	default:
		return NULL;
	}
}

static int write_funcs(struct out_sqlite *o, const char *sql, const struct fr_family *fam)
{
	sqlite3_stmt *st = sq_prep(o, sql);
	int rc = st ? 0 : -1;
	for (size_t i = 0; st && !rc && i < fam->n_funcs; i++) {
		const struct fr_family_func *fn = &fam->funcs[i];
		bi(st, 1, fn->id);
		bt(st, 2, fn->name);
		if (fam->id == FR_PROBE_CUDA)
			bt(st, 3, cuda_mem_op(fn->cls));
		else if (fam->id == FR_PROBE_NCCL)
			bi(st, 3, fn->cls == FR_FN_COLLECTIVE || fn->cls == FR_FN_P2P);
		rc = sq_put(o, st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_enums(struct out_sqlite *o)
{
	if (write_enum(o, "INSERT INTO enum_syscalls VALUES(?,?)", syscall_name, 0, 1024, 0) ||
	    write_enum(o, "INSERT INTO enum_copy_kinds VALUES(?,?)", out_copy_kind_name, 0, UINT32_MAX, 1) ||
	    write_enum(o, "INSERT INTO enum_wc_status VALUES(?,?)", out_wc_status_name, 0, UINT32_MAX, 1))
		return -1;
	return write_funcs(o, "INSERT INTO enum_cuda_funcs VALUES(?,?,?)", &fr_family_cuda) ||
	       write_funcs(o, "INSERT INTO enum_nccl_funcs VALUES(?,?,?)", &fr_family_nccl) ||
	       write_funcs(o, "INSERT INTO enum_rdma_funcs VALUES(?,?)", &fr_family_rdma) ? -1 : 0;
}

/* hosts and files */
static int write_files(struct out_sqlite *o, struct trace_set *ts, int64_t *host_ids)
{
	sqlite3_stmt *hs = sq_prep(o, "INSERT OR IGNORE INTO hosts(hostname, n_cpus, kernel_release)"
				   " VALUES(?,?,?)");
	sqlite3_stmt *hq = sq_prep(o, "SELECT host_id FROM hosts WHERE hostname = ?");
	sqlite3_stmt *fs = sq_prep(o, "INSERT INTO files VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	int rc = hs && hq && fs ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		struct trace_file *f = trace_set_file(ts, i);
		char host[65];
		snprintf(host, sizeof(host), "%s", f->hdr.host);
		char krel[9];
		snprintf(krel, sizeof(krel), "%s", f->hdr.kernel_release);
		bt(hs, 1, host);
		bi(hs, 2, f->hdr.n_cpus);
		bt(hs, 3, krel);
		if ((rc = sq_put(o, hs)))
			break;
		bt(hq, 1, host);
		host_ids[i] = sqlite3_step(hq) == SQLITE_ROW ? sqlite3_column_int64(hq, 0) : 0;
		sqlite3_reset(hq);
		int64_t off = file_offset(o, (uint32_t)i);
		const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
		uint64_t last = end ? end->end_mono_ns : f->last_event_ns;
		char trouble[512];
		trace_file_trouble(f, trouble, sizeof(trouble));
		bi(fs, 1, (int64_t)i);
		bt(fs, 2, f->path);
		bi(fs, 3, host_ids[i]);
		bt(fs, 4, f->cmdline);
		bu(fs, 5, f->size_bytes);
		bu(fs, 6, f->hdr.start_real_ns);
		bu(fs, 7, f->hdr.start_mono_ns);
		bi(fs, 8, off);
		bu(fs, 9, last > f->hdr.start_mono_ns ? last - f->hdr.start_mono_ns : 0);
		if (f->events) {
			bi(fs, 10, sq_time_ns(o, (uint32_t)i, f->first_event_ns));
			bi(fs, 11, sq_time_ns(o, (uint32_t)i, f->last_event_ns));
		}
		bu(fs, 12, f->events);
		bi(fs, 13, trace_file_complete(f));
		bt(fs, 14, trouble[0] ? trouble : "intact");
		bi(fs, 15, f->hdr.recorder_pid);
		rc = sq_put(o, fs);
	}
	sqlite3_finalize(hs);
	sqlite3_finalize(hq);
	sqlite3_finalize(fs);
	return rc;
}

static int write_processes(struct out_sqlite *o, struct trace_set *ts, const int64_t *host_ids)
{
	sqlite3_stmt *ps = sq_prep(o, "INSERT OR REPLACE INTO processes "
				   "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
	sqlite3_stmt *th = sq_prep(o, "INSERT OR IGNORE INTO threads VALUES(?,?,?,?,?)");
	int rc = ps && th ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		for (size_t k = 0; !rc && k < f->n_procs; k++) {
			const struct ts_process *p = &f->procs[k];
			int64_t rank;
			bi(ps, 1, (int64_t)i);
			bi(ps, 2, p->pid);
			bi(ps, 3, p->ppid);
			bi(ps, 4, host_ids[i]);
			if (out_process_rank(f, p->pid, &rank))
				bi(ps, 5, rank);
			bt(ps, 6, p->comm);
			bt(ps, 7, p->cmdline);
			bi(ps, 8, p->start_time_ns ? sq_time_ns(o, (uint32_t)i, p->start_time_ns) : 0);
			bi(ps, 9, p->threads);
			struct proc_identity id;
			const char *cgroup = NULL;
			trace_file_identity(f, p->pid, &id, &cgroup);
			const char *ident[] = { cgroup, id.container_id, id.container_runtime, id.pod_uid,
						id.pod_namespace, id.slurm_job, id.slurm_step,
						id.slurm_task };
			for (int c = 0; c < 8; c++) {
				if (ident[c] && ident[c][0])
					bt(ps, 10 + c, ident[c]);
				else
					bnull(ps, 10 + c);
			}
			rc = sq_put(o, ps);
		}
		/* threads named by THREAD records */
		for (size_t k = 0; !rc && k < f->thread_seen.cap; k++) {
			const struct hmap_slot *s = &f->thread_seen.slots[k];
			if (!s->used)
				continue;
			uint64_t events = 0;
			hmap_get(&o->threads, (uint64_t)i << 32 | s->key_a, s->key_b, &events);
			bi(th, 1, (int64_t)i);
			bu(th, 2, s->key_a);
			bu(th, 3, s->key_b);
			const char *name = trace_file_thread_name(f, (uint32_t)s->key_a, (uint32_t)s->key_b);
			if (name)
				bt(th, 4, name);
			else
				bnull(th, 4);
			bu(th, 5, events);
			rc = sq_put(o, th);
		}
	}
	/* threads seen only in events */
	for (size_t k = 0; !rc && k < o->threads.cap; k++) {
		const struct hmap_slot *s = &o->threads.slots[k];
		if (!s->used)
			continue;
		bi(th, 1, (int64_t)(s->key_a >> 32));
		bi(th, 2, (int64_t)(uint32_t)s->key_a);
		bu(th, 3, s->key_b);
		bnull(th, 4);
		bu(th, 5, s->value);
		rc = sq_put(o, th);
	}
	sqlite3_finalize(ps);
	sqlite3_finalize(th);
	return rc;
}

static int write_drops_damage(struct out_sqlite *o, struct trace_set *ts)
{
	sqlite3_stmt *ds = sq_prep(o, "INSERT INTO drops VALUES(?,?,?,?,?)");
	sqlite3_stmt *dm = sq_prep(o, "INSERT INTO damaged_regions VALUES(?,?,?,?,?)");
	sqlite3_stmt *dr = sq_prep(o, "INSERT INTO drop_reasons VALUES(?,?,?,?,?,?,?)");
	int rc = ds && dm && dr ? 0 : -1;
	for (size_t i = 0; !rc && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		uint32_t n_losses = 0;
		const struct fr_drop_count *loss = trace_file_drops(f, &n_losses);
		for (uint32_t k = 0; !rc && loss && k < n_losses; k++) {
			const struct fr_drop_count *d = &loss[k];
			double first, last;
			char probe[17];
			memcpy(probe, d->probe, 16);
			probe[16] = '\0';
			bi(dr, 1, (int64_t)i);
			bt(dr, 2, probe);
			bt(dr, 3, fr_drop_reason_name(d->reason));
			bt(dr, 4, out_drop_unit(d));
			bu(dr, 5, d->count);
			if (trace_file_drop_window(f, d, &first, &last)) {
				sqlite3_bind_double(dr, 6, first);
				sqlite3_bind_double(dr, 7, last);
			} else {
				bnull(dr, 6);
				bnull(dr, 7);
			}
			rc = sq_put(o, dr);
		}
		const struct fr_end *end = f->reader ? frec_end(f->reader) : NULL;
		uint32_t n = 0;
		const struct fr_probe_stats *ps = end ? frec_end_probes(f->reader, &n) : NULL;
		if (end && ps) {
			for (uint32_t k = 0; !rc && k < n; k++) {
				char name[17];
				memcpy(name, ps[k].name, 16);
				name[16] = '\0';
				bi(ds, 1, (int64_t)i);
				bt(ds, 2, name);
				bu(ds, 3, ps[k].events);
				bu(ds, 4, ps[k].drops);
				bt(ds, 5, "end");
				rc = sq_put(o, ds);
			}
		} else if (f->has_stats) {
			for (uint32_t k = 0; !rc && k < f->n_stats_probes; k++) {
				bi(ds, 1, (int64_t)i);
				bt(ds, 2, f->stats_probes[k].name);
				bu(ds, 3, f->stats_probes[k].events);
				bu(ds, 4, f->stats_probes[k].drops);
				bt(ds, 5, "stats");
				rc = sq_put(o, ds);
			}
		}
		size_t n_damage = f->reader ? frec_damage_count(f->reader) : 0;
		for (size_t k = 0; !rc && k < n_damage; k++) {
			const struct frec_damage *d = frec_damage_at(f->reader, k);
			char what[161];
			snprintf(what, sizeof(what), "%.160s", d->what);
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "damaged");
			bu(dm, 3, d->offset);
			bu(dm, 4, d->length);
			bt(dm, 5, what);
			rc = sq_put(o, dm);
		}
		for (uint64_t k = 0; !rc && k < f->n_problems && k < TS_MAX_PROBLEMS_KEPT; k++) {
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "malformed_record");
			bu(dm, 3, f->problems[k].chunk_offset);
			bnull(dm, 4);
			bt(dm, 5, f->problems[k].what);
			rc = sq_put(o, dm);
		}
		uint64_t missing = f->reader ? frec_chunks_missing(f->reader) : 0;
		if (!rc && missing) {
			char what[96];
			snprintf(what, sizeof(what), "%llu chunks listed in the index not found",
				 (unsigned long long)missing);
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "missing_chunks");
			bt(dm, 5, what);
			rc = sq_put(o, dm);
		}
		if (!rc && !trace_file_complete(f)) {
			bi(dm, 1, (int64_t)i);
			bt(dm, 2, "incomplete");
			bt(dm, 5, f->io_failed ? f->io_err.what : "no end record (recorder killed?)");
			rc = sq_put(o, dm);
		}
	}
	sqlite3_finalize(ds);
	sqlite3_finalize(dm);
	sqlite3_finalize(dr);
	return rc;
}

int sq_write_metadata(struct out_sqlite *o, struct trace_set *ts, struct frec_error *err)
{
	int64_t *host_ids = calloc(trace_set_count(ts) + 1, sizeof(*host_ids));
	int rc = host_ids ? 0 : -1;
	if (!rc)
		rc = write_enums(o);
	if (!rc)
		rc = write_files(o, ts, host_ids);
	if (!rc)
		rc = write_processes(o, ts, host_ids);
	if (!rc)
		rc = sq_write_stacks(o, ts, err);
	if (!rc)
		rc = write_drops_damage(o, ts);
	free(host_ids);
	return rc;
}
