/* Writes the seeds of fuzz_pyframes at build time: one input per code
 * object of tests/unit/pyframes/pylines_3XX.txt (line tables dumped from
 * real CPython 3.10-3.13 interpreters by dump_linetables.py), in the
 * target's layout: u16 py_version, u32 firstlineno, u32 instr_off, u8
 * qualname_len, u8 filename_len, the names, the line table.
 * Usage: make_py_seeds DIR FILE... */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: make_py_seeds DIR FILE...\n");
		return 2;
	}
	int n = 0;
	static char line[1 << 20];
	static uint8_t table[1 << 19];
	for (int a = 2; a < argc; a++) {
		FILE *in = fopen(argv[a], "r");
		if (!in) {
			fprintf(stderr, "make_py_seeds: cannot open %s\n", argv[a]);
			return 1;
		}
		while (fgets(line, sizeof(line), in)) {
			unsigned version, first;
			int used = 0;
			if (sscanf(line, "code %u %u %n", &version, &first, &used) != 2)
				continue;
			const char *p = line + used;
			size_t len = 0;
			while (hex(p[0]) >= 0 && hex(p[1]) >= 0 && len < sizeof(table)) {
				table[len++] = (uint8_t)(hex(p[0]) << 4 | hex(p[1]));
				p += 2;
			}
			while (*p == ' ')
				p++;
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, " \n"), p);
			if (!name[0])
				snprintf(name, sizeof(name), "f%d", n);
			char path[4200];
			snprintf(path, sizeof(path), "%s/py%u-%d", argv[1], version, n++);
			FILE *out = fopen(path, "wb");
			if (!out)
				return 1;
			uint16_t v16 = (uint16_t)version;
			uint32_t instr_off = 6;
			static const char file[] = "/srv/job/train.py";
			uint8_t lens[2] = { (uint8_t)strlen(name), (uint8_t)strlen(file) };
			fwrite(&v16, 2, 1, out);
			fwrite(&first, 4, 1, out);
			fwrite(&instr_off, 4, 1, out);
			fwrite(lens, 1, 2, out);
			fwrite(name, 1, lens[0], out);
			fwrite(file, 1, lens[1], out);
			fwrite(table, 1, len, out);
			if (fclose(out))
				return 1;
		}
		fclose(in);
	}
	printf("make_py_seeds: %d seeds\n", n);
	return n ? 0 : 1;
}
