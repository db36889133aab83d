/* Writes the seed corpus of fuzz_reader: small valid traces for each codec
 * (with INDEX and END), an abandoned one cut in the middle of a chunk, and
 * one with a damaged payload, so the fuzzer starts from every reader path.
 * Usage: make_seeds DIR.  The outputs are committed in corpus/reader/. */
#include "frec_writer.h"
#include "fr_family.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_seed(const char *path, int codec, int clean)
{
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.schema = fr_schema_table(&o.n_schema);
	o.codec = codec;
	o.chunk_bytes = 4096;
	const char *argv[] = { "torchrun", "--nproc", "2", "train.py" };
	struct frec_file_info info = { .host = "seed", .argv = argv, .argc = 4,
				       .start_mono_ns = 1000, .start_real_ns = 2000 };
	struct frec_writer *w;
	struct frec_error err;
	if (frec_writer_open(path, &info, &o, &w, &err) < 0)
		return -1;
	struct frec_builder *ev = frec_builder_new(w, FR_CHUNK_EVENTS);
	struct frec_builder *meta = frec_builder_new(w, FR_CHUNK_META);
	for (uint32_t i = 0; i < 150; i++) {
		struct fr_ev_cpu_sample s = { .c = { { 32, FR_EV_CPU_SAMPLE, 0 },
			5000 + i * 10, 42, 43 }, .cpu = i % 4, .stack_id = 1 + i % 3 };
		frec_builder_append(ev, &s, sizeof(s), s.c.ts_ns);
		if (i % 50 == 0) {
			uint8_t buf[24 + 4 * 8] = { 0 };
			struct fr_rec_stack st = { { sizeof(buf), FR_REC_STACK, 0 },
				1 + i / 50, 42, 1, 3, 0 };
			memcpy(buf, &st, sizeof(st));
			for (int k = 0; k < 4; k++) {
				uint64_t ip = 0x401000 + (uint64_t)k * 16;
				memcpy(buf + 24 + 8 * k, &ip, 8);
			}
			frec_builder_append(ev, buf, sizeof(buf), 0);
			struct fr_rec_clock c = { { 24, FR_REC_CLOCK, 0 }, 5000 + i, 9000 + i };
			frec_builder_append(meta, &c, sizeof(c), c.mono_ns);
		}
		if (i % 60 == 59)
			frec_builder_flush(ev);
	}
	frec_builder_free(ev);
	frec_builder_free(meta);
	if (!clean) {
		frec_writer_abandon(w);
		return 0;
	}
	struct fr_probe_stats ps[2] = { { .name = "cpu", .events = 150, .drops = 3 },
					{ .name = "proc", .events = 2, .drops = 0 } };
	struct fr_end end = { .cpu_user_ns = 1, .cpu_sys_ns = 2 };
	return frec_writer_close(w, &end, ps, 2, &err);
}

static int rewrite(const char *path, long keep, long flip)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	static unsigned char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (keep >= 0 && (size_t)keep < n)
		n = (size_t)keep;
	if (flip >= 0 && (size_t)flip < n)
		buf[flip] ^= 0x10;
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, n, f) != n)
		return -1;
	return fclose(f);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	char p[4096];
	static const struct { const char *name; int codec; } seeds[] = {
		{ "none-end.frec", 0 }, { "zstd-end.frec", 1 }, { "zlib-end.frec", 2 },
	};
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", argv[1], seeds[i].name);
		if (write_seed(p, seeds[i].codec, 1) < 0) {
			fprintf(stderr, "make_seeds: cannot write %s\n", p);
			return 1;
		}
	}
	/* crashed recorder: no END, cut in the middle of a chunk payload */
	snprintf(p, sizeof(p), "%s/zstd-truncated.frec", argv[1]);
	if (write_seed(p, 1, 0) < 0 || rewrite(p, 1650, -1) < 0)
		return 1;
	/* a flipped payload bit in the first event chunk */
	snprintf(p, sizeof(p), "%s/none-bitflip.frec", argv[1]);
	if (write_seed(p, 0, 1) < 0 || rewrite(p, -1, 2500) < 0)
		return 1;
	return 0;
}
