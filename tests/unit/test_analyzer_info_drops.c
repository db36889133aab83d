/* info's account of losses: FR_REC_SYSCALL_DROPS (the syscalls family's
 * ring-full losses per call number) decoded, the latest record kept, and
 * shown in text and JSON; a hostile record (a number listed twice, one out
 * of range, a count that does not fit) is a problem, never a count; and
 * each loss's unit: rdma's not_attached counts QPs and contexts, not
 * events.  Synthetic traces only. */
#include "check.h"
#include "test_analyzer_run.h"
#include "test_analyzer_synth.h"

#include "commands.h"

static struct cmd_run run_info(const char *path, int json)
{
	return json ? CMD_RUN(cmd_info, "info", "--json", (char *)path) :
		      CMD_RUN(cmd_info, "info", (char *)path);
}

/* One FR_REC_SYSCALL_DROPS of n (nr, count) pairs, read at ts_ns. */
static void syscall_drops(struct synth *s, uint64_t ts_ns, const uint32_t *nr,
			  const uint64_t *count, uint32_t n)
{
	uint8_t buf[512] = { 0 };
	struct fr_rec_syscall_drops h = { .ts_ns = ts_ns, .n = n };
	uint32_t size = (uint32_t)(sizeof(h) + n * sizeof(struct fr_syscall_drop));
	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < n; i++) {
		struct fr_syscall_drop d = { .nr = nr[i], .count = count[i] };
		memcpy(buf + sizeof(h) + i * sizeof(d), &d, sizeof(d));
	}
	synth_raw(s->meta, buf, size, FR_REC_SYSCALL_DROPS, ts_ns);
}

static struct fr_drop_count loss(const char *probe, uint16_t reason, uint64_t count)
{
	struct fr_drop_count d = { .reason = reason, .count = count };
	snprintf(d.probe, sizeof(d.probe), "%s", probe);
	return d;
}

static void test_counts_and_units(void)
{
	char path[512];
	synth_path("info_drops.frec", path, sizeof(path));
	struct synth s;
	if (synth_open(&s, path)) {
		CHECK(0);
		return;
	}
	synth_process(&s, 100, 1, "storm", "syscall_storm 1 2");
	/* an older reading, then the final one in nr disorder: the final wins */
	syscall_drops(&s, 1500000000ull, (uint32_t[]){ 110 }, (uint64_t[]){ 5 }, 1);
	syscall_drops(&s, 2500000000ull, (uint32_t[]){ 110, 0 }, (uint64_t[]){ 123456, 7 }, 2);
	struct fr_drop_count drops[] = {
		loss("syscalls", FR_DROP_RING_FULL, 123463),
		loss("rdma", FR_DROP_NOT_ATTACHED, 3),
		loss("cuda", FR_DROP_STACK_BUSY, 2),
		loss("nccl", FR_DROP_NOT_ATTACHED, 4),
	};
	CHECK(frec_writer_set_drops(s.w, drops, 4) == 0);
	CHECK(synth_close(&s, 10, 0) == 0);

	struct cmd_run j = run_info(path, 1);
	CHECK_EQ_U64(j.rc, 0);
	CHECK(j.out && strstr(j.out, "\"syscall_drops\":[{\"nr\":0,\"name\":\"read\",\"count\":7},"
					 "{\"nr\":110,\"name\":\"getppid\",\"count\":123456}]"));
	CHECK(j.out && strstr(j.out, "{\"probe\":\"syscalls\",\"reason\":\"ring_full\","
					 "\"count\":123463,\"lost\":\"event\""));
	CHECK(j.out && strstr(j.out, "{\"probe\":\"rdma\",\"reason\":\"not_attached\","
					 "\"count\":3,\"lost\":\"qp_or_context\""));
	CHECK(j.out && strstr(j.out, "\"reason\":\"stack_busy\",\"count\":2,\"lost\":\"stack\""));
	/* a dlopen the process could not be held at: counted per dlopen */
	CHECK(j.out && strstr(j.out, "{\"probe\":\"nccl\",\"reason\":\"not_attached\","
					 "\"count\":4,\"lost\":\"dlopen\""));
	cmd_run_free(&j);

	struct cmd_run t = run_info(path, 0);
	CHECK_EQ_U64(t.rc, 0);
	CHECK(t.out && strstr(t.out, "syscalls lost to a full ring, by call:\n"));
	CHECK(t.out && strstr(t.out, "    getppid                        123456\n"));
	CHECK(t.out && strstr(t.out, "    read                                7\n"));
	CHECK(t.out && strstr(t.out, "not_attached            3  qp_or_context"));
	CHECK(t.out && !strstr(t.out, "not_attached            3  event"));
	cmd_run_free(&t);
}

/* A recording without the record says null (not known), not "none lost". */
static void test_absent(void)
{
	char path[512];
	synth_path("info_drops_absent.frec", path, sizeof(path));
	struct synth s;
	if (synth_open(&s, path)) {
		CHECK(0);
		return;
	}
	synth_process(&s, 100, 1, "storm", "syscall_storm 1 2");
	CHECK(synth_close(&s, 10, 0) == 0);
	struct cmd_run j = run_info(path, 1);
	CHECK_EQ_U64(j.rc, 0);
	CHECK(j.out && strstr(j.out, "\"syscall_drops\":null"));
	cmd_run_free(&j);
	struct cmd_run t = run_info(path, 0);
	CHECK(t.out && !strstr(t.out, "by call:"));
	cmd_run_free(&t);
}

static void test_hostile(void)
{
	static const struct {
		const char *name;
		uint32_t nr[2];
		uint32_t n, claimed;
	} cases[] = {
		{ "twice", { 110, 110 }, 2, 2 },
		{ "range", { 110, FR_SYSCALL_DROP_NRS }, 2, 2 },
		{ "overlong", { 110, 0 }, 2, 1000000 },
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char path[512], name[64];
		snprintf(name, sizeof(name), "info_drops_%s.frec", cases[c].name);
		synth_path(name, path, sizeof(path));
		struct synth s;
		if (synth_open(&s, path)) {
			CHECK(0);
			return;
		}
		uint8_t buf[256] = { 0 };
		struct fr_rec_syscall_drops h = { .ts_ns = 1500000000ull, .n = cases[c].claimed };
		memcpy(buf, &h, sizeof(h));
		for (uint32_t i = 0; i < cases[c].n; i++) {
			struct fr_syscall_drop d = { .nr = cases[c].nr[i], .count = 9 };
			memcpy(buf + sizeof(h) + i * sizeof(d), &d, sizeof(d));
		}
		synth_raw(s.meta, buf, (uint32_t)(sizeof(h) + cases[c].n * sizeof(struct fr_syscall_drop)),
			  FR_REC_SYSCALL_DROPS, h.ts_ns);
		CHECK(synth_close(&s, 10, 0) == 0);
		struct cmd_run j = run_info(path, 1);
		/* described as far as it can be read: the counts are not trusted */
		CHECK(j.out && strstr(j.out, "\"syscall_drops\":null"));
		CHECK(j.err && strstr(j.err, "1 malformed record"));
		if (!(j.out && strstr(j.out, "\"syscall_drops\":null")))
			fprintf(stderr, "  case %s:\n%s\n%s\n", cases[c].name, j.out, j.err);
		cmd_run_free(&j);
	}
}

int main(void)
{
	test_counts_and_units();
	test_absent();
	test_hostile();
	return check_finish();
}
