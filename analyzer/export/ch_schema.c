/* The tables of the ClickHouse export; see ch_schema.h and CLICKHOUSE.md.
 * recordings comes first: the export deletes it first and writes it last,
 * so a recording has a row there only when all its rows are in.  Job
 * tables are keyed by job_id: the export finds the jobs its recordings
 * were part of in job_recordings before it deletes. */
#include "ch_schema.h"

#define JOB "job_id String, start DateTime, "

const struct ch_table ch_tables[] = {
	{ "recordings",
	  "recording_id String, job_id String, file String, host String, command String, "
	  "start DateTime, start_ns UInt64, duration_ns UInt64, ranks Array(Int64), "
	  "pids Array(Int64), probes Array(String), status String, drops UInt64, "
	  "trigger String, trigger_ns UInt64, trigger_detail String, exported_at DateTime, "
	  "containers Array(String), pods Array(String), pod_namespaces Array(String), "
	  "slurm_jobs Array(String)",
	  "(start, recording_id)", "recording_id" },
	{ "findings",
	  JOB "position UInt64, listed UInt64, kind String, cost_ms Nullable(Float64), "
	  "cost_ms_per_step Nullable(Float64), share Nullable(Float64), pids Array(Int64), "
	  "ranks Array(Int64), frames Array(String), evidence String, fix String",
	  "(job_id, position)", "job_id" },
	{ "stragglers",
	  JOB "recording_id String, rank Int64, host String, pid UInt64, steps UInt64, "
	  "mean_step_ms Nullable(Float64), mean_wait_ms Nullable(Float64), "
	  "straggler_score Nullable(Float64), latest UInt64, is_straggler UInt64, "
	  "confidence Nullable(Float64), cost_ms_per_step Nullable(Float64), evidence String",
	  "(job_id, rank)", "job_id" },
	{ "collectives",
	  JOB "recording_id String, rank Int64, host String, pid UInt64, step Int64, seq UInt64, "
	  "op String, instance Int64, complete UInt64, bytes UInt64, ready_ns Int64, "
	  "entry_ns Int64, exit_ns Int64, wait_ns Int64",
	  "(job_id, instance, rank)", "job_id" },
	{ "rank_steps",
	  JOB "recording_id String, rank Int64, host String, pid UInt64, step UInt64, "
	  "duration_ns Int64, wait_ns Int64, compute_ns Int64",
	  "(job_id, rank, step)", "job_id" },
	/* which recordings make up each job: one row per recording, so a job's
	 * rows need not each carry its list (at 16,384 ranks that list in
	 * every collective row was 15 GB of export) */
	{ "job_recordings",
	  "job_id String, recording_id String, start DateTime",
	  "(job_id, recording_id)", "job_id" },
	{ "stacks",
	  "recording_id String, job_id String, start DateTime, kind String, unit String, "
	  "stack String, value UInt64",
	  "(recording_id, kind, stack)", "recording_id" },
	{ "failed_allocations",
	  "recording_id String, job_id String, start DateTime, t_ns UInt64, pid UInt64, "
	  "tid UInt64, device Int64, function String, bytes UInt64, error Int64, "
	  "error_name String, in_use_bytes UInt64, stack Array(String), "
	  "holder_stacks Array(String), holder_bytes Array(UInt64), "
	  "holder_allocations Array(UInt64)",
	  "(recording_id, t_ns)", "recording_id" },
	{ "rdma_connections",
	  "recording_id String, job_id String, start DateTime, host String, pid UInt64, "
	  "rank Int64, local_qp UInt64, remote_qp Int64, ops UInt64, bytes UInt64, "
	  "completions UInt64, errors UInt64, flush_errors UInt64, latency_count UInt64, "
	  "p50_ns UInt64, p99_ns UInt64, max_ns UInt64, error_status Array(String), "
	  "error_status_count Array(UInt64)",
	  "(recording_id, pid, local_qp)", "recording_id" },
};

const size_t ch_n_tables = sizeof(ch_tables) / sizeof(ch_tables[0]);
