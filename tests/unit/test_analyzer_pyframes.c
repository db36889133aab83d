/* Python frame naming (analyzer/stacks/pyframes.c): the line of every instruction
 * of real code objects (CPython 3.10-3.13 fixtures made by
 * tests/unit/pyframes/dump_linetables.py, plus the interpreters installed
 * here when there are any), damaged tables, the code table's choice among
 * records of a reused address, and the frame names. */
#include "check.h"
#include "pyframes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Checks every "code"/"lines" pair of one fixture; returns code objects seen. */
static int check_fixture(const char *path)
{
	FILE *in = fopen(path, "r");
	if (!in) {
		fprintf(stderr, "cannot open %s\n", path);
		return 0;
	}
	size_t cap = 1 << 20;
	char *line = malloc(cap), *lines = malloc(cap);
	uint8_t *table = malloc(cap);
	int codes = 0;
	while (fgets(line, (int)cap, in) && fgets(lines, (int)cap, in)) {
		unsigned ver, first;
		int used = 0;
		char hex[2];
		if (sscanf(line, "code %u %u %n%1s", &ver, &first, &used, hex) < 3 || !used) {
			CHECK(!"fixture line");
			break;
		}
		const char *h = line + used;
		size_t len = 0;
		while (hexval(h[0]) >= 0 && hexval(h[1]) >= 0) {
			table[len++] = (uint8_t)(hexval(h[0]) << 4 | hexval(h[1]));
			h += 2;
		}
		const char *qual = strchr(h, ' ') ? strchr(h, ' ') + 1 : "?";
		char *p = lines + 5;
		int bad = 0;
		for (uint32_t unit = 0;; unit++) {
			char *end;
			long want = strtol(p, &end, 10);
			if (end == p)
				break;
			p = end;
			int32_t got = py_line_at((uint16_t)ver, first, table, len, unit * 2);
			if (got != want && bad++ < 3)
				fprintf(stderr, "%s: %u %.*s unit %u: line %d, CPython says %ld\n", path,
					ver, (int)strcspn(qual, "\n"), qual, unit, got, want);
		}
		CHECK(bad == 0);
		/* before the first instruction: the first line */
		CHECK_EQ_U64(py_line_at((uint16_t)ver, first, table, len, (uint32_t)-2), first);
		/* past the end: no line, no read past the table */
		CHECK_EQ_U64(py_line_at((uint16_t)ver, first, table, len, 0x7ffffff0u), 0);
		/* every truncation of the table stays inside it (ASan checks) */
		for (size_t cut = 0; cut < len && cut < 64; cut++)
			(void)py_line_at((uint16_t)ver, first, table, cut, 8);
		codes++;
	}
	fclose(in);
	free(line);
	free(lines);
	free(table);
	return codes;
}

static void test_fixtures(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", __FILE__);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	static const char *const versions[] = { "310", "311", "312", "313" };
	for (size_t i = 0; i < 4; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/pyframes/pylines_%s.txt", dir, versions[i]);
		int n = check_fixture(path);
		CHECK(n >= 10);
	}
	/* The interpreters of this machine, when there are any (both 3.11 on the
	 * reference box: Debian's /usr/bin/python3 and pyenv's python3). */
	static const char *const pythons[] = { "/usr/bin/python3", "python3" };
	for (size_t i = 0; i < 2; i++) {
		char out[1024], cmd[8400];
		const char *tmp = getenv("FLIGHTREC_TEST_TMP");
		snprintf(out, sizeof(out), "%s/pylines_local_%zu.txt", tmp && tmp[0] ? tmp : "/tmp", i);
		snprintf(cmd, sizeof(cmd),
			 "mkdir -p \"$(dirname '%s')\" && %s -c 'import sys; sys.exit(sys.version_info < (3, 10))' "
			 ">/dev/null 2>&1 && %s '%s/pyframes/dump_linetables.py' '%s' 2>/dev/null",
			 out, pythons[i], pythons[i], dir, out);
		if (system(cmd) != 0) {
			printf("skipped: %s (not installed, or older than 3.10)\n", pythons[i]);
			continue;
		}
		CHECK(check_fixture(out) >= 10);
		unlink(out);
	}
}

/* Hand-made tables: 3.10 pairs with "no line" and long ranges, 3.11 forms. */
static void test_handmade(void)
{
	/* 3.10: [0,6) line 10+1, [6,8) no line, [8,10) line 11+2, [10,12) same */
	static const uint8_t t310[] = { 6, 1, 2, 0x80, 2, 2, 2, 0 };
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 0), 11);
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 4), 11);
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 6), 0);
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 8), 13);
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 10), 13);
	CHECK_EQ_U64(py_line_at(310, 10, t310, sizeof(t310), 12), 0);
	CHECK_EQ_U64(py_line_at(310, 10, t310, 3, 8), 0); /* odd length: last byte ignored */

	/* 3.11: code 11 (+1) len 1; code 15 (none) len 2; code 13 (svarint -2*2+1
	 * = -2 -> encoded 5) len 1; code 14 long (+3 = 6, then 3 varints) len 8 */
	static const uint8_t t311[] = {
		0x80 | 11 << 3 | 0,
		0x80 | 15 << 3 | 1,
		0x80 | 13 << 3 | 0, 5,
		0x80 | 14 << 3 | 7, 6, 0, 1, 2,
	};
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 0), 101);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 2), 0);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 4), 0);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 6), 99);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 8), 102);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 22), 102);
	CHECK_EQ_U64(py_line_at(311, 100, t311, sizeof(t311), 24), 0);
	/* a varint that never ends, a table not starting at an entry */
	static const uint8_t endless[] = { 0x80 | 13 << 3, 0x41, 0x41, 0x41 };
	CHECK_EQ_U64(py_line_at(311, 7, endless, sizeof(endless), 0), 0);
	static const uint8_t garbage[] = { 0x01, 0x02 };
	CHECK_EQ_U64(py_line_at(311, 7, garbage, sizeof(garbage), 0), 0);
	CHECK_EQ_U64(py_line_at(311, 7, NULL, 0, 0), 0);
	/* a line delta that would go to zero or below: no line */
	static const uint8_t below[] = { 0x80 | 13 << 3, 0x3f, 0x01 };
	CHECK_EQ_U64(py_line_at(311, 3, below, sizeof(below), 0), 0);
}

static void test_table(void)
{
	struct py_table *t = py_table_new();
	static const uint8_t lt[] = { 0x80 | 10 << 3 | 1, 0x80 | 11 << 3 | 1 };
	CHECK(t);
	CHECK(py_table_add(t, 42, 0x1000, 5, 311, 20, "Model.forward", 13, "/src/model.py", 13,
			   lt, sizeof(lt)) == 0);
	CHECK(py_table_add(t, 42, 0x1000, 50, 311, 7, "train_step", 10, "train.py", 8, lt,
			   sizeof(lt)) == 0);
	CHECK(py_table_add(t, 43, 0x1000, 60, 311, 1, "other\n;x", 8, "o.py", 4, NULL, 0) == 0);
	CHECK_EQ_U64(py_table_count(t), 3);
	/* before its first record: the earliest; between: the one at or before */
	CHECK_STR(py_table_find(t, 42, 0x1000, 1, -1)->qualname, "Model.forward");
	CHECK_STR(py_table_find(t, 42, 0x1000, 30, -1)->qualname, "Model.forward");
	CHECK_STR(py_table_find(t, 42, 0x1000, 50, -1)->qualname, "train_step");
	CHECK_STR(py_table_find(t, 42, 0x1000, 99, -1)->qualname, "train_step");
	CHECK(py_table_find(t, 42, 0x2000, 99, -1) == NULL);
	/* the frame's fingerprint (firstlineno & 0xffff) picks the record */
	CHECK_STR(py_table_find(t, 42, 0x1000, 99, 20)->qualname, "Model.forward");
	CHECK_STR(py_table_find(t, 42, 0x1000, 1, 7)->qualname, "train_step");
	CHECK_STR(py_table_find(t, 42, 0x1000, 99, 65555 & 0xffff)->qualname, "train_step");
	CHECK(py_table_find(t, 44, 0x1000, 99, -1) == NULL);
	char buf[256];
	CHECK_STR(py_frame_name(py_table_find(t, 42, 0x1000, 6, -1), 0, buf, sizeof(buf)),
		  "Model.forward (model.py:20)");
	CHECK_STR(py_frame_name(py_table_find(t, 42, 0x1000, 6, -1), 4, buf, sizeof(buf)),
		  "Model.forward (model.py:21)");
	CHECK_STR(py_frame_name(py_table_find(t, 42, 0x1000, 6, -1), 8, buf, sizeof(buf)),
		  "Model.forward (model.py)");
	CHECK_STR(py_frame_name(py_table_find(t, 43, 0x1000, 60, -1), 0, buf, sizeof(buf)),
		  "other??x (o.py)");
	CHECK_STR(py_frame_name(NULL, 0, buf, sizeof(buf)), "[unknown python]");
	py_table_free(t);
	py_table_free(NULL);
}

int main(void)
{
	test_handmade();
	test_fixtures();
	test_table();
	return check_finish();
}
