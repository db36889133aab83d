/* On-disk structures of the flightrec trace container (format v1).
 * format/SPEC.md is the contract; these structs carry its field names in its
 * order.  Little-endian; all integers unaligned-safe only when read through
 * memcpy (the reader never casts file bytes in place before checking size).
 */
#ifndef FLIGHTREC_FORMAT_H
#define FLIGHTREC_FORMAT_H

#include <stdint.h>

#define FR_FILE_MAGIC "FLIGHTR\x01" /* 8 bytes, the last one is 0x01 */

/* fr_file_hdr.flags (SPEC.md §3) */
/* --stack dwarf copies go from user memory straight into their ring record
 * (the kernel's bpf_probe_read_user_dynptr): the recorder chose the one-copy
 * BPF objects.  Nothing in the records differs. */
#define FR_FILE_USTACK_DIRECT (1u << 0)
#define FR_VERSION_MAJOR 1
#define FR_VERSION_MINOR 2 /* 1.2: sparse raw stacks (FR_USTACK_SPARSE) */

/* Fixed part of the file header; cmdline_len bytes of NUL-separated argv
 * follow, then padding to 8.  header_size = 128 + FR_ALIGN8(cmdline_len).
 * header_crc32c covers the fixed part with the crc field zeroed, then the
 * cmdline bytes. */
struct fr_file_hdr {
	char magic[8];
	uint16_t version_major; /* a reader refuses a major it does not know */
	uint16_t version_minor; /* additions only */
	uint32_t header_size;
	uint64_t start_mono_ns; /* clock anchor: CLOCK_MONOTONIC ... */
	uint64_t start_real_ns; /* ... and CLOCK_REALTIME read together */
	uint32_t flags;
	uint32_t cmdline_len;
	char host[64];          /* NUL-terminated node name */
	uint32_t recorder_pid;
	uint32_t n_cpus;
	char kernel_release[8]; /* first 7 chars of uname -r, NUL-terminated */
	uint32_t _reserved;
	uint32_t header_crc32c;
};
_Static_assert(sizeof(struct fr_file_hdr) == 128, "fr_file_hdr");

#define FR_CHUNK_MAGIC 0x4b435246u /* "FRCK" little-endian */

enum fr_chunk_type {
	FR_CHUNK_SCHEMA = 1, /* FR_REC_SCHEMA records */
	FR_CHUNK_EVENTS = 2, /* kernel events (and the STACK records they use) */
	FR_CHUNK_META = 3,   /* process, mapping, dso, clock, stats records */
	FR_CHUNK_INDEX = 0x10,
	FR_CHUNK_END = 0x11,
};

enum fr_codec {
	FR_CODEC_NONE = 0,
	FR_CODEC_ZSTD = 1,
	FR_CODEC_ZLIB = 2,
};

/* Chunk header.  The payload (stored_len bytes, compressed with codec)
 * follows, then zero padding to 8.  A chunk's payload decompresses to raw_len
 * bytes holding record_count records (struct fr_rec_hdr framed).
 * header_crc32c covers bytes 0..59 so a scanner can trust the lengths before
 * reading the payload; payload_crc32c covers the stored payload bytes. */
struct fr_chunk_hdr {
	uint32_t magic;
	uint16_t chunk_type;
	uint8_t codec;
	uint8_t flags;
	uint32_t header_size; /* 64 */
	uint32_t record_count;
	uint32_t raw_len;
	uint32_t stored_len;
	uint64_t seq; /* 0, 1, 2 ... in file order */
	uint64_t first_ts_ns;
	uint64_t last_ts_ns;
	uint32_t payload_crc32c;
	uint32_t _reserved[2];
	uint32_t header_crc32c;
};
_Static_assert(sizeof(struct fr_chunk_hdr) == 64, "fr_chunk_hdr");

/* Upper bounds a reader enforces (hostile input). */
#define FR_MAX_CHUNK_RAW (256u << 20)
#define FR_MAX_CMDLINE (1u << 20)

/* INDEX chunk payload: an array of entries, one per chunk before it. */
struct fr_index_entry {
	uint64_t offset; /* file offset of the chunk header */
	uint64_t seq;
	uint16_t chunk_type;
	uint8_t codec;
	uint8_t _pad;
	uint32_t record_count;
	uint64_t first_ts_ns;
	uint64_t last_ts_ns;
};
_Static_assert(sizeof(struct fr_index_entry) == 40, "fr_index_entry");

/* END chunk payload: fixed part, then n_probes x struct fr_probe_stats,
 * then n_drops x struct fr_drop_count (bpf/events.h; 0 before format 1.1).
 * Present only when the recorder closed the file. */
struct fr_end {
	uint64_t index_offset; /* file offset of the INDEX chunk header */
	uint64_t total_records;
	uint64_t total_chunks; /* chunks before the INDEX chunk */
	uint64_t total_drops;
	uint64_t end_mono_ns;
	uint64_t end_real_ns;
	uint64_t cpu_user_ns; /* recorder CPU time for the whole run */
	uint64_t cpu_sys_ns;
	uint32_t n_probes;
	uint32_t n_drops;
};
_Static_assert(sizeof(struct fr_end) == 72, "fr_end");

/* END since 1.1: after the drop counts, when the recording stopped early
 * because the file could not be written (disk full, quota, I/O error): the
 * chunk that failed was cut away and this END written in room the writer
 * kept for it.  Absent otherwise; older readers ignore it. */
#define FR_END_STOP_MAGIC 0x504f5453u /* "STOP" */
struct fr_end_stop {
	uint32_t magic;      /* FR_END_STOP_MAGIC */
	int32_t error;       /* errno of the failed write: ENOSPC, EDQUOT, EIO ... */
	uint64_t at_mono_ns; /* when it failed */
};
_Static_assert(sizeof(struct fr_end_stop) == 16, "fr_end_stop");

#endif
