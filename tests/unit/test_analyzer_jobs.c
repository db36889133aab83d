/* `--jobs N` on the commands that read many files (stragglers, report,
 * sqlite): on gen_ranks traces of 32 ranks in 8 files, the output is byte
 * for byte the same for every N, the straggler gen_ranks planted is named,
 * a damaged chunk is found and reported once, the same way with workers as
 * without, and a bad N is a usage error.  Findings name every rank once
 * when the nodes' pids repeat (containers).  Also the per-process lists
 * the NCCL and stragglers models keep their events in. */
#include "check.h"
#include "test_analyzer_synth.h"

#include "commands.h"
#include "proc_lists.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RANKS 32
#define PER_NODE 4
#define NODES (RANKS / PER_NODE)
#define STRAGGLER 21

static char dir[512];
static char paths[NODES][600];

/* the build always defines it (tests/unit/CMakeLists.txt: gen_ranks is
 * built in every configuration) */
#ifndef GEN_RANKS
#error "GEN_RANKS: the path of samples/gen_ranks"
#endif

/* The job's traces into synth dir name, pids "job" (unique across the job)
 * or "node" (each node's from 10000 again, as in containers). */
static int generate(const char *name, const char *pids)
{
	synth_path(name, dir, sizeof(dir));
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && '%s' --ranks %d --ranks-per-node %d --steps 30 "
		 "--straggler %d --late-ms 10 --pids %s --out '%s' > /dev/null", dir, GEN_RANKS,
		 RANKS, PER_NODE, STRAGGLER, pids, dir);
	if (system(cmd) != 0)
		return -1;
	for (int n = 0; n < NODES; n++)
		snprintf(paths[n], sizeof(paths[n]), "%s/node-%03d.frec", dir, n);
	return 0;
}

typedef int (*command_fn)(int argc, char **argv, FILE *out, FILE *errout);

/* Runs cmd over every file plus extra arguments, with "--jobs" jobs (NULL:
 * no --jobs); its standard output and error in *out and *err. */
static int run(command_fn fn, const char *name, const char *jobs, const char *const *extra,
	       char **out, char **err)
{
	char *argv[NODES + 8];
	int argc = 0;
	argv[argc++] = (char *)name;
	for (int n = 0; n < NODES; n++)
		argv[argc++] = paths[n];
	for (; extra && *extra; extra++)
		argv[argc++] = (char *)*extra;
	if (jobs) {
		argv[argc++] = (char *)"--jobs";
		argv[argc++] = (char *)jobs;
	}
	argv[argc] = NULL;
	size_t olen, elen;
	FILE *o = open_memstream(out, &olen), *e = open_memstream(err, &elen);
	int rc = fn(argc, argv, o, e);
	fclose(o);
	fclose(e);
	return rc;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		if (*len + 65536 > cap) {
			char *g = realloc(buf, cap = cap ? 2 * cap : 1 << 20);
			if (!g)
				break;
			buf = g;
		}
		size_t n = fread(buf + *len, 1, cap - *len, f);
		if (!n)
			break;
		*len += n;
	}
	fclose(f);
	return buf;
}

static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb && la > 0 && memcmp(x, y, la) == 0;
	free(x);
	free(y);
	return same;
}

static void test_stragglers(void)
{
	const char *json[] = { "--json", NULL };
	char *base = NULL, *base_err = NULL;
	CHECK(run(cmd_stragglers, "stragglers", "1", json, &base, &base_err) == 0);
	char want[64];
	snprintf(want, sizeof(want), "\"straggler\":{\"rank\":%d,", STRAGGLER);
	CHECK(base && strstr(base, want) != NULL);
	/* the evidence, counted in the model's second look at the samples */
	CHECK(base && strstr(base, "spends 20% of its compute segments in load_batch (others: 0%)"));
	const char *jobs[] = { "2", "4", "8", NULL };
	for (const char *const *j = jobs; *j; j++) {
		char *o = NULL, *e = NULL;
		CHECK(run(cmd_stragglers, "stragglers", *j, json, &o, &e) == 0);
		CHECK(o && base && strcmp(o, base) == 0);
		CHECK(e && base_err && strcmp(e, base_err) == 0);
		free(o);
		free(e);
	}
	/* the default (the CPUs) and the --jobs=N spelling */
	char *o = NULL, *e = NULL;
	CHECK(run(cmd_stragglers, "stragglers", NULL, json, &o, &e) == 0);
	CHECK(o && base && strcmp(o, base) == 0);
	free(o);
	free(e);
	const char *eq[] = { "--jobs=3", "--json", NULL };
	CHECK(run(cmd_stragglers, "stragglers", NULL, eq, &o, &e) == 0);
	CHECK(o && base && strcmp(o, base) == 0);
	free(o);
	free(e);
	free(base);
	free(base_err);
}

static void test_outputs(void)
{
	char r1[600], r4[600], d1[600], d4[600];
	snprintf(r1, sizeof(r1), "%s/report-1.html", dir);
	snprintf(r4, sizeof(r4), "%s/report-4.html", dir);
	snprintf(d1, sizeof(d1), "%s/db-1.db", dir);
	snprintf(d4, sizeof(d4), "%s/db-4.db", dir);
	char *o = NULL, *e = NULL;
	const char *rep1[] = { "-o", r1, NULL }, *rep4[] = { "-o", r4, NULL };
	CHECK(run(cmd_report, "report", "1", rep1, &o, &e) == 0);
	free(o);
	free(e);
	CHECK(run(cmd_report, "report", "4", rep4, &o, &e) == 0);
	free(o);
	free(e);
	CHECK(same_file(r1, r4));
	const char *db1[] = { "-o", d1, "--force", NULL }, *db4[] = { "-o", d4, "--force", NULL };
	CHECK(run(cmd_sqlite, "sqlite", "1", db1, &o, &e) == 0);
	free(o);
	free(e);
	CHECK(run(cmd_sqlite, "sqlite", "4", db4, &o, &e) == 0);
	free(o);
	free(e);
	CHECK(same_file(d1, d4));
}

/* One byte of an EVENTS chunk's payload flipped in the middle of a file:
 * the workers' read fails its CRC, the pass reads it again itself, and the
 * damage is reported as without workers. */
static void test_damage(void)
{
	const char *victim = paths[5];
	struct stat st;
	CHECK(stat(victim, &st) == 0);
	int fd = open(victim, O_RDWR);
	CHECK(fd >= 0);
	unsigned char b;
	off_t at = st.st_size / 2;
	CHECK(pread(fd, &b, 1, at) == 1);
	b ^= 0x5a;
	CHECK(pwrite(fd, &b, 1, at) == 1);
	close(fd);
	const char *json[] = { "--json", NULL };
	char *o1 = NULL, *e1 = NULL, *o4 = NULL, *e4 = NULL;
	int rc1 = run(cmd_stragglers, "stragglers", "1", json, &o1, &e1);
	int rc4 = run(cmd_stragglers, "stragglers", "4", json, &o4, &e4);
	CHECK(rc1 == rc4);
	CHECK(o1 && o4 && strcmp(o1, o4) == 0);
	CHECK(e1 && e4 && strcmp(e1, e4) == 0);
	CHECK(e1 && strstr(e1, "node-005.frec") != NULL); /* the damage is reported */
	/* once, as `check` counts it: the align pass, the events pass and the
	 * stragglers' second look each read the chunk, and only the first
	 * read records it */
	CHECK(e1 && strstr(e1, "node-005.frec: 1 damaged region;") != NULL);
	if (e1 && !strstr(e1, "node-005.frec: 1 damaged region;"))
		fprintf(stderr, "stragglers on a damaged set said: %s\n", e1);
	free(o1);
	free(e1);
	free(o4);
	free(e4);
}

static void test_bad_jobs(void)
{
	const char *bad[] = { "0", "x", "257", "-1", NULL };
	for (const char *const *j = bad; *j; j++) {
		char *o = NULL, *e = NULL;
		CHECK(run(cmd_stragglers, "stragglers", *j, NULL, &o, &e) == 2);
		CHECK(e && strstr(e, "--jobs") != NULL);
		free(o);
		free(e);
	}
	char *o = NULL, *e = NULL;
	char name[] = "report", opt[] = "--jobs";
	char *argv[] = { name, paths[0], opt, NULL };
	size_t ol, el;
	FILE *fo = open_memstream(&o, &ol), *fe = open_memstream(&e, &el);
	CHECK(cmd_report(3, argv, fo, fe) == 2); /* no value */
	fclose(fo);
	fclose(fe);
	CHECK(e && strstr(e, "needs a value") != NULL);
	free(o);
	free(e);
}

static int findings_of(char **out)
{
	const char *json[] = { "--json", NULL };
	char *err = NULL;
	int rc = run(cmd_findings, "findings", NULL, json, out, &err);
	free(err);
	return rc;
}

/* The part of a findings --json output from its first finding of kind on,
 * its "pids":[...] and the evidence's "pid N" taken out: what must not
 * depend on how the nodes number their processes. */
static char *without_pids(const char *json, const char *kind)
{
	char want[64];
	snprintf(want, sizeof(want), "{\"kind\":\"%s\"", kind);
	const char *from = json ? strstr(json, want) : NULL;
	if (!from)
		return NULL;
	char *s = strdup(from);
	for (char *p = s; s && (p = strstr(p, "\"pids\":[")) != NULL;) {
		char *end = strchr(p, ']');
		if (!end)
			break;
		memmove(p, end + 2, strlen(end + 2) + 1); /* the comma after it too */
	}
	for (char *p = s; s && (p = strstr(p, "pid 1")) != NULL;) {
		char *end = p + 4;
		while (*end >= '0' && *end <= '9')
			end++;
		memmove(p + 4, end, strlen(end) + 1);
		p += 4;
	}
	return s;
}

/* Every node's ranks are pids 10000-10003: the straggler finding names the
 * 31 ranks that wait (by pid alone it named 4 and its share was 31/4 times
 * too large), nccl_exchange all 32, processes lists all 32, and the
 * findings are those of the same job with pids unique across it. */
static void test_node_pids(const char *node_pids)
{
	char *job_pids = NULL;
	CHECK(findings_of(&job_pids) == 0);
	char want[400] = "\"ranks\":[";
	for (int r = 0, n = 0; r < RANKS; r++)
		if (r != STRAGGLER)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%d",
				 n++ ? "," : "", r);
	strcat(want, "]");
	const char *strag = node_pids ? strstr(node_pids, "{\"kind\":\"straggler\"") : NULL;
	CHECK(strag != NULL);
	CHECK(strag && strstr(strag, want) != NULL);
	CHECK(job_pids && strstr(job_pids, want) != NULL);
	char *a = without_pids(node_pids, "straggler"), *b = without_pids(job_pids, "straggler");
	CHECK(a && b && strcmp(a, b) == 0);
	if (a && b && strcmp(a, b))
		fprintf(stderr, "node pids: %.600s\njob pids:  %.600s\n", a, b);
	free(a);
	free(b);
	/* each process once, told apart by its node */
	CHECK(node_pids && strstr(node_pids, "{\"host\":\"node-005\",\"pid\":10001,\"rank\":21,"));
	size_t listed = 0;
	const char *procs = node_pids ? strstr(node_pids, "\"processes\":[") : NULL;
	const char *procs_end = procs ? strstr(procs, "],\"not_evaluated\"") : NULL;
	for (const char *p = procs; p && procs_end && (p = strstr(p, "{\"host\":")) && p < procs_end; p++)
		listed++;
	CHECK_EQ_U64(listed, RANKS);
	a = without_pids(node_pids, "nccl_exchange");
	CHECK(a && strstr(a, "\"ranks\":[0,1,2,3,4,5,6,7,8,") != NULL);
	CHECK(a && strstr(a, ",28,29,30,31]") != NULL);
	free(a);
	free(job_pids);
}

static void test_proc_lists(void)
{
	struct proc_lists pl;
	proc_lists_init(&pl, sizeof(uint64_t));
	/* two processes in two files, interleaved, first seen out of order */
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t *a = proc_lists_append(&pl, 1, 7);
		uint64_t *b = proc_lists_append(&pl, 0, 9);
		CHECK(a && b);
		if (a && b) {
			*a = i;
			*b = 1000 + i;
		}
	}
	CHECK_EQ_U64(pl.n, 2);
	proc_lists_sort(&pl);
	CHECK(pl.lists[0].file_index == 0 && pl.lists[0].pid == 9);
	struct proc_list *l = proc_lists_find(&pl, 1, 7);
	CHECK(l == &pl.lists[1]);
	CHECK(l && l->n == 1000 && ((uint64_t *)l->items)[999] == 999);
	CHECK(proc_lists_find(&pl, 1, 9) == NULL);
	proc_list_release(l);
	CHECK(l && !l->items && l->n == 1000);
	proc_lists_free(&pl);
}

int main(void)
{
	test_proc_lists();
	char *node_pids = NULL;
	CHECK(generate("jobs_ranks_node_pids", "node") == 0);
	CHECK(findings_of(&node_pids) == 0);
	CHECK(generate("jobs_ranks", "job") == 0);
	test_node_pids(node_pids);
	free(node_pids);
	test_stragglers();
	test_outputs();
	test_bad_jobs();
	test_damage();
	return check_finish();
}
