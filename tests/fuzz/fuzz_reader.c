/* libFuzzer target for the trace reader: the input is a whole trace file.
 * Runs everything the analyzer runs on an untrusted file — header checks,
 * chunk scan and recovery, decompression, record iteration, END and INDEX
 * parsing — and touches every byte the reader hands out, so the sanitizers
 * see any read past what was checked.
 *
 * Each input runs twice: as given, and with every CRC it contains repaired.
 * Random mutations almost never keep a CRC valid, so without the second run
 * the fuzzer would rarely get past the checksums into decompression, record
 * framing and END/INDEX parsing. */
#include "frec_crc32c.h"
#include "fuzz_input.h"
#include "frec_reader.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink; /* keeps the byte sums from being optimised out */

static void read_all(const uint8_t *data, size_t size)
{
	int fd = fuzz_input_fd(data, size);
	if (fd < 0)
		return;
	struct frec_reader *r;
	struct frec_error err;
	if (frec_open_fd(fd, "fuzz-input", &r, &err) < 0) {
		close(fd);
		return;
	}
	uint64_t sum = frec_file_header(r)->start_mono_ns;
	for (const char *p = frec_cmdline(r); *p; p++)
		sum += (uint8_t)*p;

	struct frec_chunk c;
	while (frec_next_chunk(r, &c, &err) == 1) {
		for (size_t i = 0; i < c.len; i++)
			sum += c.data[i];
		size_t cursor = 0;
		const struct fr_rec_hdr *rec;
		while (frec_chunk_next_record(r, &c, &cursor, &rec) == 1) {
			const uint8_t *b = (const uint8_t *)rec;
			for (uint32_t i = 0; i < rec->size; i++)
				sum += b[i];
			sum += rec->type;
		}
		(void)frec_chunk_type_name(c.hdr.chunk_type);
		(void)frec_codec_name(c.hdr.codec);
	}
	for (size_t i = 0; i < frec_damage_count(r); i++) {
		const struct frec_damage *d = frec_damage_at(r, i);
		sum += d->offset + d->length;
		for (const char *p = d->what; *p; p++)
			sum += (uint8_t)*p;
	}
	if (frec_has_end(r)) {
		const struct fr_end *e = frec_end(r);
		uint32_t n;
		const struct fr_probe_stats *ps = frec_end_probes(r, &n);
		sum += e->total_records + e->n_probes;
		for (uint32_t i = 0; i < n; i++)
			sum += ps[i].events + ps[i].drops + (uint8_t)ps[i].name[0];
	}
	sum += frec_chunks_read(r) + frec_chunks_missing(r) + frec_seq_gaps(r);
	sink = sum;
	frec_close(r);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_all(data, size);
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fuzz_repair_crcs(copy, size);
	read_all(copy, size);
	free(copy);
	return 0;
}
