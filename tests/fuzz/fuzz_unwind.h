/* The input layout of fuzz_unwind (little endian), written by
 * make_unwind_seeds:
 *   u64 regs[17]          DWARF order: rax rdx rcx rbx rsi rdi rbp rsp
 *                         r8..r15 rip, as FR_REC_USTACK carries them
 *   u32 stack_len         bytes copied from rsp upward
 *   u8 n_images (<= 4), u8 n_mods (<= 16), u16 flags (reserved)
 *   u32 image_len[n_images]
 *   n_mods x struct fuzz_unwind_mod
 *   the images, one after the other, then the stack bytes
 * A length that runs past the input is cut to what is there. */
#ifndef FLIGHTREC_FUZZ_UNWIND_H
#define FLIGHTREC_FUZZ_UNWIND_H

#include <stdint.h>

#define FUZZ_UNWIND_MAX_IMAGES 4
#define FUZZ_UNWIND_MAX_MODS 16

struct fuzz_unwind_hdr {
	uint64_t regs[17];
	uint32_t stack_len;
	uint8_t n_images, n_mods;
	uint16_t flags;
};

struct fuzz_unwind_mod {
	uint64_t start, end, pgoff; /* as in /proc/PID/maps */
	uint8_t image;              /* index into the images */
	uint8_t pad[7];
};

_Static_assert(sizeof(struct fuzz_unwind_hdr) == 144, "fuzz_unwind_hdr");
_Static_assert(sizeof(struct fuzz_unwind_mod) == 32, "fuzz_unwind_mod");

#endif
