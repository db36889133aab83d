/* Anonymous files (see anon_file.h). */
#include "anon_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

const char *anon_file_dir(void)
{
	const char *dir = getenv("TMPDIR");
	return dir && dir[0] ? dir : "/tmp";
}

int anon_file_create(void)
{
	/* O_EXCL: the file can never be given a name with linkat() later. */
	int fd = open(anon_file_dir(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	int saved = errno;
	fd = memfd_create("flightrec-member", MFD_CLOEXEC);
	if (fd < 0 && saved == EMFILE)
		errno = EMFILE;
	return fd;
}

int anon_file_write(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0) {
			errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}
