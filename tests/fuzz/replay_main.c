/* Replays a libFuzzer corpus through LLVMFuzzerTestOneInput without
 * libFuzzer, so any compiler builds it and the seeds run as a unit test.
 * Usage: fuzz_reader_replay DIR|FILE... ; fails if an argument has no
 * input at all (a missing corpus must not pass silently). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: cannot open %s\n", path);
		return -1;
	}
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *p = realloc(buf, cap * 2);
			if (!p) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = p;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return -1;
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int ran = 0;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char path[4096];
				snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
				if (replay_file(path) == 0)
					ran++;
				else
					failed = 1;
			}
			if (d)
				closedir(d);
		} else if (replay_file(argv[i]) == 0) {
			ran++;
		}
		printf("%s: %d inputs replayed\n", argv[i], ran);
		if (!ran)
			failed = 1;
	}
	return failed;
}
