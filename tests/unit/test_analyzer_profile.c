/* Unit tests for the pieces of the profile formats that need no trace:
 * the protobuf writer's wire bytes and gzip framing (pb_write.c), the
 * recorder's command line as the analyzer reads it (recorder_cmdline.c),
 * stack profile rows (stack_profile.c) and which frames --hide-interpreter
 * takes for Python's or the interpreter's (py_hide.c).  The whole pprof
 * and speedscope files are read by their real readers in
 * tests/integration/test_profile_formats.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "pb_write.h"
#include "py_hide.h"
#include "recorder_cmdline.h"
#include "stack_profile.h"

static int bytes_are(const struct pb_buf *b, const uint8_t *want, size_t n)
{
	return !b->failed && b->len == n && memcmp(b->data, want, n) == 0;
}

static void test_wire(void)
{
	struct pb_buf b = { 0 };
	pb_uint(&b, 1, 300); /* the encoding guide's example */
	CHECK(bytes_are(&b, (const uint8_t[]){ 0x08, 0xac, 0x02 }, 3));
	pb_reset(&b);
	pb_uint(&b, 2, 0); /* proto3: zero is left out */
	CHECK_EQ_U64(b.len, 0);
	pb_int(&b, 1, -1); /* int64, no zigzag: ten bytes */
	CHECK(bytes_are(&b, (const uint8_t[]){ 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					     0xff, 0xff, 0x01 }, 11));
	pb_reset(&b);
	pb_string(&b, 6, ""); /* string_table[0]: kept though empty */
	pb_string(&b, 6, "ab");
	CHECK(bytes_are(&b, (const uint8_t[]){ 0x32, 0x00, 0x32, 0x02, 'a', 'b' }, 6));
	pb_reset(&b);
	uint64_t v[] = { 1, 0, 128 };
	pb_packed(&b, 1, v, 3);
	CHECK(bytes_are(&b, (const uint8_t[]){ 0x0a, 0x04, 0x01, 0x00, 0x80, 0x01 }, 6));
	struct pb_buf sub = { 0 };
	pb_uint(&sub, 1, 5);
	pb_reset(&b);
	pb_msg(&b, 4, &sub);
	CHECK(bytes_are(&b, (const uint8_t[]){ 0x22, 0x02, 0x08, 0x05 }, 4));
	pb_append(&b, &sub);
	CHECK_EQ_U64(b.len, 6);

	/* gzip framing that zlib reads back byte for byte, over several output
	 * chunks */
	pb_reset(&b);
	for (uint64_t i = 0; i < 200000; i++)
		pb_uint(&b, 1 + (uint32_t)(i % 7), i * 2654435761u);
	char *gz = NULL;
	size_t gz_len = 0;
	FILE *f = open_memstream(&gz, &gz_len);
	CHECK(f && pb_write_gzip(&b, f) == 0);
	if (f)
		fclose(f);
	CHECK(gz_len > 18 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
	uint8_t *back = malloc(b.len + 16);
	z_stream z = { 0 };
	CHECK(inflateInit2(&z, 15 + 16) == Z_OK);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)gz_len;
	z.next_out = back;
	z.avail_out = (uInt)(b.len + 16);
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	CHECK_EQ_U64(z.total_out, b.len);
	CHECK(back && memcmp(back, b.data, b.len) == 0);
	inflateEnd(&z);
	free(back);
	free(gz);
	pb_free(&sub);
	pb_free(&b);
}

static void test_recorder_cmdline(void)
{
	const char *rec = "/opt/fr/bin/flightrec record -o run.frec -F 499 --probes cpu -- "
			  "python3 train.py --freq 7 -- x";
	CHECK_STR(recorder_job_command(rec), "python3 train.py --freq 7 -- x");
	CHECK_EQ_U64(recorder_option_uint(rec, "--freq", 'F', 99), 499);
	CHECK_EQ_U64(recorder_option_uint("flightrec record -o a -F250 -- b", "--freq", 'F', 99), 250);
	CHECK_EQ_U64(recorder_option_uint("flightrec record -o a --freq=31 -- b", "--freq", 'F', 99), 31);
	CHECK_EQ_U64(recorder_option_uint("flightrec record -o a --freq 1 -F 2 -- b", "--freq", 'F', 99), 2);
	CHECK_EQ_U64(recorder_option_uint("flightrec record -o a -- b -F 5", "--freq", 'F', 99), 99);
	CHECK_EQ_U64(recorder_option_uint("flightrec record -o a --launch-stack-every 8 --pid 4",
					  "--launch-stack-every", 0, 64), 8);
	/* not the recorder's line: all of it is the job's, and nothing is read */
	CHECK_STR(recorder_job_command("python3 -F 3 x.py"), "python3 -F 3 x.py");
	CHECK_EQ_U64(recorder_option_uint("python3 -F 3 x.py", "--freq", 'F', 99), 99);
	CHECK_STR(recorder_job_command("flightrec record -o a --pid 12"), "flightrec record -o a --pid 12");
	CHECK_STR(recorder_job_command(""), "");
}

static void test_stack_profile(void)
{
	struct stack_profile p;
	stack_profile_init(&p);
	CHECK(stack_profile_add(&p, 1, 10, 11, 7, STACK_LEAF_NONE, 1, 100) == 0);
	CHECK(stack_profile_add(&p, 0, 10, 11, 7, 3, 1, 5) == 0);
	CHECK(stack_profile_add(&p, 0, 10, 11, 7, 2, 1, 6) == 0); /* same key, other leaf */
	CHECK(stack_profile_add(&p, 0, 10, 11, 7, 3, 2, 10) == 0);
	CHECK_EQ_U64(p.n_rows, 3);
	stack_profile_sort(&p);
	CHECK(p.rows[0].file == 0 && p.rows[0].leaf == 2 && p.rows[0].value == 6);
	CHECK(p.rows[1].leaf == 3 && p.rows[1].count == 3 && p.rows[1].value == 15);
	CHECK(p.rows[2].file == 1 && p.rows[2].leaf == STACK_LEAF_NONE);
	CHECK_EQ_U64(stack_profile_total(&p), 121);
	const char *names[] = { "cudaMalloc", NULL, NULL, NULL };
	p.leaf_names = names;
	p.n_leaf_names = 4;
	CHECK(stack_profile_leaf(&p, &p.rows[2]) == NULL);
	CHECK_STR(stack_profile_leaf(&p, &p.rows[1]), "[unknown]");
	stack_profile_free(&p);
}

static void test_py_hide(void)
{
	CHECK(py_is_python_frame("train_step (train.py:12)"));
	CHECK(py_is_python_frame("<module> (<frozen importlib._bootstrap>:241)"));
	CHECK(py_is_python_frame("[unknown python]"));
	CHECK(!py_is_python_frame("foo::bar(int) const"));
	CHECK(!py_is_python_frame("at::native::add (x)"));
	char file[64];
	int line = -1;
	CHECK(py_frame_source("a.b (model.py:120)", file, sizeof(file), &line));
	CHECK_STR(file, "model.py");
	CHECK_EQ_U64(line, 120);
	CHECK(py_frame_source("f (<frozen abc>)", file, sizeof(file), &line) && line == 0);
	CHECK_STR(file, "<frozen abc>");
	struct py_hide *ph = py_hide_new(NULL);
	CHECK(ph != NULL);
	/* names from no trace: only offsets into the interpreter's files */
	CHECK(py_is_interpreter_frame(ph, "libpython3.11.so.1.0+0x1a2b"));
	CHECK(py_is_interpreter_frame(ph, "python3.11+0x40"));
	CHECK(!py_is_interpreter_frame(ph, "libtorch_cpu.so+0x40"));
	CHECK(!py_is_interpreter_frame(ph, "_PyEval_EvalFrameDefault")); /* no symbol table here */
	const char *stack[] = { "_start", "python3.11+0x10", "main (t.py:1)", "python3.11+0x20",
				"libtorch_cpu.so+0x40", "python3.11+0x30", "f (t.py:2)",
				"python3.11+0x50" };
	unsigned char hide[8];
	CHECK_EQ_U64(py_hide_mask(ph, stack, 8, hide), 2);
	CHECK(!hide[0] && !hide[1] && !hide[2] && hide[3] && !hide[4] && hide[5] && !hide[6] &&
	      !hide[7]);
	py_hide_free(ph);
}

int main(void)
{
	test_wire();
	test_recorder_cmdline();
	test_stack_profile();
	test_py_hide();
	return check_finish();
}
