/* A real shared object for the seeds of fuzz_recorder_elf: compiled and
 * linked here (DT_NEEDED, DT_RUNPATH with $ORIGIN, .debug_frame instead of
 * .eh_frame, .symtab), never committed as a binary. */
#include <string.h>

int seed_lib_square(int x);
int seed_lib_sum(const int *v, int n);
size_t seed_lib_name_len(const char *name);

/* a call into libc, so the file has a DT_NEEDED entry */
size_t seed_lib_name_len(const char *name)
{
	return strlen(name);
}

static int seed_lib_twice(int x)
{
	return x * 2;
}

int seed_lib_square(int x)
{
	return x * x + seed_lib_twice(x) - 2 * x;
}

int seed_lib_sum(const int *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += seed_lib_square(v[i]);
	return s;
}
