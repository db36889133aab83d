/* Makes a known set of write(2) calls: COUNT writes to FILE, the i-th (from
 * 0) of size BASE + i bytes, then prints the fd it used.  The integration
 * test checks that every one is in the trace with its fd and size.  With
 * SLEEP_MS, one nanosleep of that long after the writes: a call that a
 * --syscall-min-us filter must keep.
 *
 * usage: write_calls FILE COUNT BASE [SLEEP_MS] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: write_calls FILE COUNT BASE [SLEEP_MS]\n");
		return 2;
	}
	int count = atoi(argv[2]), base = atoi(argv[3]);
	int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	char *buf = malloc((size_t)(base + count) + 1);
	if (!buf)
		return 1;
	memset(buf, 'x', (size_t)(base + count));
	for (int i = 0; i < count; i++) {
		if (write(fd, buf, (size_t)(base + i)) != base + i) {
			perror("write");
			return 1;
		}
	}
	close(fd);
	free(buf);
	if (argc == 5) {
		long ms = atol(argv[4]);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
		while (nanosleep(&ts, &ts))
			;
	}
	printf("fd=%d\n", fd);
	return 0;
}
