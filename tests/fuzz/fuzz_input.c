/* Input handling both fuzz targets share; see fuzz_input.h. */
#include "fuzz_input.h"
#include "frec_crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int fuzz_input_fd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("frec-fuzz", MFD_CLOEXEC);
	if (fd < 0) {
		char path[] = "/tmp/frec-fuzz-XXXXXX";
		fd = mkstemp(path);
		if (fd < 0)
			return -1;
		unlink(path);
	}
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	return fd;
}

/* Walks the input as the writer lays it out and recomputes the file header
 * CRC and each chunk's payload and header CRCs (bounded by the input). */
void fuzz_repair_crcs(uint8_t *d, size_t n)
{
	struct fr_file_hdr fh;
	if (n < sizeof(fh))
		return;
	memcpy(&fh, d, sizeof(fh));
	if ((uint64_t)fh.cmdline_len <= n - sizeof(fh)) {
		fh.header_crc32c = 0;
		uint32_t crc = frec_crc32c(frec_crc32c(0, &fh, sizeof(fh)),
					   d + sizeof(fh), fh.cmdline_len);
		memcpy(d + offsetof(struct fr_file_hdr, header_crc32c), &crc, 4);
	}
	uint64_t pos = fh.header_size;
	while (pos <= n && n - pos >= sizeof(struct fr_chunk_hdr)) {
		struct fr_chunk_hdr h;
		memcpy(&h, d + pos, sizeof(h));
		if (h.magic != FR_CHUNK_MAGIC) {
			pos += 8;
			continue;
		}
		uint64_t avail = n - pos - sizeof(h);
		int fits = h.stored_len <= avail;
		if (fits)
			h.payload_crc32c = frec_crc32c(0, d + pos + sizeof(h), h.stored_len);
		h.header_crc32c = frec_crc32c(0, &h, offsetof(struct fr_chunk_hdr,
							     header_crc32c));
		memcpy(d + pos, &h, sizeof(h));
		if (!fits)
			break;
		pos += sizeof(h) + FR_ALIGN8((uint64_t)h.stored_len);
	}
}

/* Keeps the bytes observed: the writers' output is not optimized away. */
static volatile uint64_t null_sink;

static ssize_t null_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	if (n)
		null_sink += (uint8_t)buf[0] + (uint8_t)buf[n - 1];
	return (ssize_t)n;
}

FILE *fuzz_null_stream(void)
{
	static FILE *f;
	if (!f) {
		cookie_io_functions_t io = { .write = null_write };
		f = fopencookie(NULL, "w", io);
		if (!f)
			f = fopen("/dev/null", "w");
	}
	return f;
}
