/* Makes a known set of write(2) calls: COUNT writes to FILE, the i-th (from
 * 0) of size BASE + i bytes, then prints the fd it used.  The integration
 * test checks that every one is in the trace with its fd and size.
 *
 * usage: write_calls FILE COUNT BASE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: write_calls FILE COUNT BASE\n");
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
	printf("fd=%d\n", fd);
	return 0;
}
