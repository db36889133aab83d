/* End of recording: for every DSO that any recorded stack touched, write a
 * compact symbol table (only the symbols that cover recorded addresses) so
 * the analyzer never needs the node's files.  Off the hot path: runs after
 * the drain has stopped. */
#ifndef FLIGHTREC_SYMBOL_WRITER_H
#define FLIGHTREC_SYMBOL_WRITER_H

#include <stdint.h>

#include "dso_table.h"
#include "frec_writer.h"
#include "stack_table.h"

#define KERNEL_DSO_ID 0xffffffffu

struct symbol_writer_stats {
	uint32_t dsos_written;
	uint32_t dsos_unreadable; /* touched but the file could not be read */
	uint64_t symbols_written;
};

void write_symbols(struct frec_builder *b, const struct stack_table *stacks,
		   struct dso_table *dsos, struct symbol_writer_stats *st);

#endif
