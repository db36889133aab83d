/* --stack dwarf: what the analyzer needs to unwind raw stacks through a
 * file without the node's copy of it.  For every file a traced process maps:
 * FR_REC_DSO with all its function symbols (frames are only known after
 * unwinding, so the compact "symbols that cover recorded addresses" of fp
 * mode cannot be chosen here) and FR_REC_UNWIND with a reduced ELF image:
 * the ELF header, the PT_LOAD program headers and .eh_frame_hdr, .eh_frame
 * and .debug_frame at their original addresses, the way separate debug
 * files are laid out.  Runs on the tracking thread, once per file. */
#ifndef FLIGHTREC_UNWIND_WRITER_H
#define FLIGHTREC_UNWIND_WRITER_H

#include <stddef.h>
#include <stdint.h>

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
};

void unwind_write_file(struct frec_builder *b, uint32_t dso_id, int fd, const char *path,
		       const uint8_t *build_id, uint8_t build_id_len,
		       struct unwind_writer_stats *st);

/* The reduced ELF image of the file at fd (malloc'd), or NULL when it has no
 * unwind sections.  Exposed for tests. */
uint8_t *unwind_reduced_image(int fd, size_t *len);

#endif
