/* Writes the seeds of fuzz_records and fuzz_outputs at build time (never
 * committed as binaries): each trace given (the recordings of
 * corpus/analyzer/) in the layout of fuzz_trace.h, record by record, and a
 * hostile twin of it whose strings — host, command line, process and
 * thread names, mapped paths, symbol names, environment values, Python
 * names, attach texts — are overwritten in place with markup, quotes,
 * escapes, terminal controls and invalid UTF-8 (lengths and NULs kept, so
 * the records stay well-formed and the strings reach the writers).
 * The metadata comes first, then at most EVENTS_PER_TYPE events of each
 * type; SCHEMA records are left out (the writer writes its own).
 * Usage: make_record_seeds DIR TRACE... */
#include "fuzz_trace.h"
#include "frec_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVENTS_PER_TYPE 40

static const char hostile[] = "</script><!--]]>\"'\\&<img src=x onerror=alert(1)>\x1b[31m"
			      "\xff\xc3(\xe2\x80\xa8;\t\r\x7f%s%n$(id)`\x01";

static size_t hostile_at;

/* Overwrites s[0..len) with the hostile text, keeping NULs (and '=' when
 * keep_key: an environment entry keeps its key). */
static void spoil(uint8_t *s, size_t len, int keep_key)
{
	int in_value = !keep_key;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == 0) {
			in_value = !keep_key;
			continue;
		}
		if (!in_value) {
			in_value = s[i] == '=';
			continue;
		}
		s[i] = (uint8_t)hostile[hostile_at++ % (sizeof(hostile) - 1)];
		if (!s[i])
			s[i] = '?';
	}
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return v;
}

/* The strings of one record body (after its 8-byte header), by type. */
static void spoil_record(uint16_t type, uint8_t *b, size_t n)
{
	/* offsets are the struct's minus the 8-byte header */
#define SPAN(off, len) do { size_t o_ = (off), l_ = (len); \
		if (o_ <= n && l_ <= n - o_) spoil(b + o_, l_, 0); } while (0)
	switch (type) {
	case FR_REC_PROCESS:
		if (n >= 48) {
			SPAN(32, 16);
			SPAN(48, rd32(b + 28));
		}
		break;
	case FR_REC_THREAD:
		SPAN(16, 16);
		break;
	case FR_REC_MAPPING:
		if (n >= 64)
			SPAN(64, rd16(b + 62));
		break;
	case FR_REC_DSO:
		if (n >= 40) {
			uint32_t nsyms = rd32(b + 4), strtab = rd32(b + 8);
			uint16_t path_len = rd16(b + 12);
			size_t at = 40;
			SPAN(at, path_len);
			at += FR_ALIGN8((size_t)path_len) + (size_t)nsyms * 16;
			/* keep one symbol in four as it was, so some stacks still read */
			if (at <= n && strtab <= n - at)
				for (size_t k = 0, name = 0; k < strtab; k++)
					if (b[at + k] == 0 && ++name % 4)
						spoil(b + at + k + 1, strnlen((char *)b + at + k + 1,
									strtab - k - 1), 0);
		}
		break;
	case FR_REC_PROC_ENV:
		if (n >= 16) {
			uint32_t len = rd32(b + 12);
			if (len <= n - 16)
				spoil(b + 16, len, 1);
		}
		break;
	case FR_REC_ATTACH:
		if (n >= 80) {
			SPAN(16, 47);
			SPAN(80, rd32(b + 72));
		}
		break;
	case FR_REC_PYCODE:
		if (n >= 32)
			SPAN(32, (size_t)rd16(b + 18) + rd16(b + 20));
		break;
	}
#undef SPAN
}

static void put(FILE *out, const void *p, size_t n)
{
	fwrite(p, 1, n, out);
}

static int convert(const char *trace, const char *path, int spoiled)
{
	struct frec_reader *r;
	struct frec_error err;
	if (frec_open(trace, &r, &err) < 0) {
		fprintf(stderr, "make_record_seeds: %s: %s\n", trace, err.what);
		return -1;
	}
	FILE *out = fopen(path, "wb");
	if (!out) {
		frec_close(r);
		return -1;
	}
	const struct fr_file_hdr *fh = frec_file_header(r);
	put(out, &fh->start_mono_ns, 8);
	put(out, &fh->start_real_ns, 8);
	/* host NUL then the command line's arguments (already NUL-separated) */
	uint8_t head[4096];
	size_t n_head = (size_t)snprintf((char *)head, sizeof(head), "%s", fh->host) + 1;
	const char *cmd = frec_cmdline(r);
	size_t cmd_len = strlen(cmd);
	for (size_t i = 0; i < cmd_len && n_head < sizeof(head) - 1; i++)
		head[n_head++] = cmd[i] == ' ' ? 0 : (uint8_t)cmd[i];
	head[n_head++] = 0;
	if (spoiled)
		spoil(head, n_head, 0);
	uint16_t n16 = (uint16_t)n_head;
	put(out, &n16, 2);
	put(out, head, n_head);
	/* two passes: the metadata chunks first (processes, mappings, symbols,
	 * unwind images, Python code: what the decoder reads before any event),
	 * then the events, at most EVENTS_PER_TYPE of each type, so seeds stay
	 * small and fast while every record kind is in them */
	size_t n_records = 0;
	static size_t per_type[65536];
	memset(per_type, 0, sizeof(per_type));
	for (int pass = 0; pass < 2; pass++) {
		int want_meta = pass == 0;
		struct frec_chunk c;
		if (pass == 1) {
			frec_close(r);
			if (frec_open(trace, &r, &err) < 0) {
				fclose(out);
				return -1;
			}
		}
		while (frec_next_chunk(r, &c, &err) == 1) {
			int meta = c.hdr.chunk_type == FR_CHUNK_META;
			if (meta != want_meta || (!meta && c.hdr.chunk_type != FR_CHUNK_EVENTS))
				continue;
			size_t cursor = 0;
			const struct fr_rec_hdr *rec;
			long last = -1;
			uint8_t last_flags = 0;
			while (frec_chunk_next_record(r, &c, &cursor, &rec) == 1) {
				int sel = fuzz_trace_sel(rec->type);
				if (sel < 0 || rec->type == FR_REC_SCHEMA || rec->size < 8 ||
				    rec->size - 8 > 65535)
					continue;
				if (!meta && ++per_type[rec->type] > EVENTS_PER_TYPE)
					continue;
				uint16_t len = (uint16_t)(rec->size - 8);
				uint8_t body[65536];
				memcpy(body, (const uint8_t *)rec + 8, len);
				if (spoiled)
					spoil_record(rec->type, body, len);
				uint8_t hdr[4] = { (uint8_t)sel,
						   (uint8_t)(meta | (rec->flags & 63) << 2), 0, 0 };
				memcpy(hdr + 2, &len, 2);
				last = ftell(out);
				last_flags = hdr[1];
				put(out, hdr, 4);
				put(out, body, len);
				n_records++;
			}
			/* seal the chunk where the recording sealed it */
			if (last >= 0) {
				long end = ftell(out);
				uint8_t flags = last_flags | FUZZ_TRACE_FLUSH;
				fseek(out, last + 1, SEEK_SET);
				put(out, &flags, 1);
				fseek(out, end, SEEK_SET);
			}
		}
	}
	frec_close(r);
	if (fclose(out))
		return -1;
	return n_records ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: make_record_seeds DIR TRACE...\n");
		return 2;
	}
	int n = 0;
	for (int i = 2; i < argc; i++) {
		const char *base = strrchr(argv[i], '/');
		base = base ? base + 1 : argv[i];
		for (int spoiled = 0; spoiled < 2; spoiled++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s%s", argv[1], spoiled ? "hostile-" : "",
				 base);
			if (convert(argv[i], path, spoiled) == 0)
				n++;
			else
				remove(path);
		}
	}
	printf("make_record_seeds: %d seeds\n", n);
	return n ? 0 : 1;
}
