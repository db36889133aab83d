/* CRC-32C (Castagnoli), the checksum of every header and payload in a trace
 * (format/SPEC.md section 1). */
#ifndef FLIGHTREC_CRC32C_H
#define FLIGHTREC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Chainable like zlib's crc32(): start with crc = 0, pass the previous result
 * to continue over the next bytes.  frec_crc32c(0, "123456789", 9) ==
 * 0xE3069283.  Uses the SSE4.2 crc32 instruction when the CPU has it. */
uint32_t frec_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable slice-by-8 implementation, exposed so tests can compare it
 * with the hardware path. */
uint32_t frec_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
