/* --stack dwarf: what the analyzer needs to unwind raw stacks through a
 * file without the node's copy of it.  For every file a traced process maps:
 * FR_REC_DSO with all its function symbols (frames are only known after
 * unwinding, so the compact "symbols that cover recorded addresses" of fp
 * mode cannot be chosen here) and FR_REC_UNWIND with a reduced ELF image:
 * the ELF header, the PT_LOAD program headers and .eh_frame_hdr, .eh_frame
 * and .debug_frame at their original addresses, the way separate debug
 * files are laid out.  Runs on the tracking thread, once per file (the dso
 * table knows a file by its build-id, so one mapped by many processes is
 * written once); unwind_cache.h keeps the result for later recordings. */
#ifndef FLIGHTREC_UNWIND_WRITER_H
#define FLIGHTREC_UNWIND_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frec_records.h"
#include "frec_writer.h"

#define UNWIND_STRIPPED_NAMED 3

struct unwind_writer_stats {
	uint32_t files;
	uint64_t image_bytes;
	uint64_t symbols;
	uint32_t debug_files;    /* stripped files named from their debug file */
	uint32_t stripped;       /* stripped files with no debug file: exported
				    names only, other frames read file+offset */
	char stripped_names[UNWIND_STRIPPED_NAMED][64]; /* the first ones */
	/* the build-id cache (unwind_cache.h) */
	uint32_t files_seen;     /* files given to the writer */
	uint32_t cache_hits;     /* files written from their cache entry */
	uint32_t cache_stored;   /* files read from the ELF file and cached */
	uint32_t cache_rejected; /* entries found damaged or foreign (rewritten) */
	uint32_t no_build_id;    /* files without a build-id: never cached */
	uint64_t file_cpu_ns;    /* thread CPU spent on files: ELF or cache, records */
};

/* What --stack dwarf writes for one file apart from what belongs to the
 * recording (its dso_id and path): the function symbols laid out as the
 * FR_REC_DSO record holds them, and the reduced image.  unwind_file_read
 * derives it from the file, the build-id cache keeps it between
 * recordings, and unwind_file_emit writes the same bytes from either. */
struct unwind_file_data {
	bool has_symbols;              /* a FR_REC_DSO is written */
	uint8_t stripped;              /* elf_load_symtab_debug's *stripped */
	uint32_t nsyms;
	const struct fr_dso_sym *syms; /* sorted by offset; name_off into strtab */
	const char *strtab;            /* NUL-terminated names */
	uint32_t strtab_len;
	const uint8_t *image;          /* NULL: no unwind sections */
	uint32_t image_len;            /* < 1 GiB */
	void *owned[3];                /* freed by unwind_file_data_free */
};

/* Reads the symbols (the debug file's too for a stripped file) and the
 * reduced image of the file at fd.  0, or -1 when fd is -1. */
int unwind_file_read(int fd, const uint8_t *build_id, uint8_t build_id_len,
		     struct unwind_file_data *out);
/* FR_REC_DSO then FR_REC_UNWIND for dso_id from d, and the stats. */
void unwind_file_emit(struct frec_builder *b, uint32_t dso_id, const char *path,
		      const uint8_t *build_id, uint8_t build_id_len,
		      const struct unwind_file_data *d, struct unwind_writer_stats *st);
void unwind_file_data_free(struct unwind_file_data *d);

/* unwind_file_read then unwind_file_emit, without the cache. */
void unwind_write_file(struct frec_builder *b, uint32_t dso_id, int fd, const char *path,
		       const uint8_t *build_id, uint8_t build_id_len,
		       struct unwind_writer_stats *st);

/* The reduced ELF image of the file at fd (malloc'd), or NULL when it has no
 * unwind sections.  Exposed for tests. */
uint8_t *unwind_reduced_image(int fd, size_t *len);

#endif
