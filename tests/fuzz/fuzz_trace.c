/* Structured inputs written as a trace; see fuzz_trace.h. */
#include "fuzz_trace.h"
#include "fuzz_input.h"
#include "fr_family.h"
#include "frec_writer.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static const uint16_t meta_types[] = {
	FR_REC_PROCESS, FR_REC_MAPPING, FR_REC_STACK, FR_REC_DSO, FR_REC_CLOCK,
	FR_REC_STATS, FR_REC_SCHEMA, FR_REC_THREAD, FR_REC_PROC_ENV, FR_REC_ATTACH,
	FR_REC_RDMA_COUNTERS, FR_REC_USTACK, FR_REC_UNWIND, FR_REC_PYCODE, FR_REC_PYTHON,
	FR_REC_SNAPSHOT, FR_REC_INFLIGHT,
	0x0ff, 0x1ff, /* types no reader knows */
};

static uint16_t types[256];
static size_t n_types;

static void init_types(void)
{
	if (n_types)
		return;
	size_t n_schema = 0;
	const struct frec_schema_entry *schema = fr_schema_table(&n_schema);
	for (size_t i = 0; i < n_schema && n_types < 200; i++) {
		int dup = 0;
		for (size_t k = 0; k < n_types; k++)
			dup |= types[k] == schema[i].rec_type;
		if (!dup)
			types[n_types++] = schema[i].rec_type;
	}
	for (size_t i = 0; i < sizeof(meta_types) / sizeof(meta_types[0]); i++) {
		int dup = 0;
		for (size_t k = 0; k < n_types; k++)
			dup |= types[k] == meta_types[i];
		if (!dup)
			types[n_types++] = meta_types[i];
	}
}

uint16_t fuzz_trace_type(uint8_t sel)
{
	init_types();
	return types[sel % n_types];
}

int fuzz_trace_sel(uint16_t type)
{
	init_types();
	for (size_t i = 0; i < n_types; i++)
		if (types[i] == type)
			return (int)i;
	return -1;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

int fuzz_trace_build(const uint8_t *data, size_t size)
{
	if (size < 18)
		return -1;
	struct frec_file_info info = { .start_mono_ns = rd64(data), .start_real_ns = rd64(data + 8) };
	size_t at = 16;
	size_t n_head = rd16(data + at);
	at += 2;
	if (n_head > size - at)
		n_head = size - at;
	/* host NUL argv... : at most 64 arguments */
	char *head = calloc(1, n_head + 1);
	const char *argv[64];
	int argc = 0;
	if (!head)
		return -1;
	memcpy(head, data + at, n_head);
	at += n_head;
	info.host = "fuzz";
	for (size_t p = 0, first = 1; p < n_head; first = 0) {
		size_t len = strnlen(head + p, n_head - p);
		if (first) {
			if (len)
				info.host = head + p;
		} else if (argc < 64) {
			argv[argc++] = head + p;
		}
		p += len + 1;
	}
	info.argv = argv;
	info.argc = argc;

	int fd = fuzz_input_fd(NULL, 0);
	int keep = fd >= 0 ? dup(fd) : -1;
	struct frec_writer_opts o;
	frec_writer_opts_default(&o);
	o.codec = 0; /* FR_CODEC_NONE: the fastest, and the bytes stay as given */
	o.chunk_bytes = 64 << 10;
	o.schema = fr_schema_table(&o.n_schema);
	struct frec_writer *w = NULL;
	struct frec_error err;
	if (keep < 0 || frec_writer_open_fd(fd, "fuzz", &info, &o, &w, &err)) {
		if (keep >= 0)
			close(keep);
		else if (fd >= 0)
			close(fd);
		free(head);
		return -1;
	}
	struct frec_builder *b[2] = { frec_builder_new(w, FR_CHUNK_EVENTS),
				      frec_builder_new(w, FR_CHUNK_META) };
	uint8_t *rec = malloc(8 + 65536 + 8);
	while (rec && b[0] && b[1] && size - at >= 4) {
		uint8_t sel = data[at], flags = data[at + 1];
		size_t len = rd16(data + at + 2);
		at += 4;
		if (len > size - at)
			len = size - at;
		uint32_t rec_size = FR_ALIGN8((uint32_t)(8 + len));
		struct fr_rec_hdr h = { .size = rec_size, .type = fuzz_trace_type(sel),
					.flags = (uint16_t)(flags >> 2) };
		memset(rec, 0, rec_size);
		memcpy(rec, &h, sizeof(h));
		memcpy(rec + 8, data + at, len);
		at += len;
		int meta = flags & FUZZ_TRACE_META;
		/* events carry their time first; the chunk's time range is made of it */
		uint64_t ts = !meta && len >= 8 ? rd64(rec + 8) : 0;
		frec_builder_append(b[meta], rec, rec_size, ts);
		if (flags & FUZZ_TRACE_FLUSH)
			frec_builder_flush(b[meta]);
	}
	free(rec);
	frec_builder_free(b[0]);
	frec_builder_free(b[1]);
	static const struct fr_probe_stats probes[2] = { { .name = "cpu", .events = 10, .drops = 1 },
							 { .name = "cuda", .events = 5 } };
	struct fr_end end = { .end_mono_ns = info.start_mono_ns + 1000000000ull,
			      .end_real_ns = info.start_real_ns + 1000000000ull };
	int rc = frec_writer_close(w, &end, probes, 2, &err);
	free(head);
	if (rc) {
		close(keep);
		return -1;
	}
	return keep;
}
