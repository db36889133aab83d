/* `--jobs N` (see cli_jobs.h). */
#include "cli_jobs.h"
#include "cli.h"

#include <string.h>
#include <unistd.h>

unsigned cli_default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return 1;
	return n > CLI_JOBS_DEFAULT_MAX ? CLI_JOBS_DEFAULT_MAX : (unsigned)n;
}

int cli_take_jobs(int *argc, char **argv, const char *cmd, unsigned *jobs, FILE *errout)
{
	*jobs = cli_default_jobs();
	for (int i = 1; i < *argc;) {
		if (strcmp(argv[i], "--") == 0)
			break;
		int at = i;
		int m = cli_uint_option(*argc, argv, &i, "--jobs", cmd, 1, CLI_JOBS_MAX, jobs, errout);
		if (m < 0)
			return CLI_USAGE;
		if (m == 0) {
			i++;
			continue;
		}
		/* argv[at..i] held the option (and its value): close the gap */
		int taken = i - at + 1;
		memmove(&argv[at], &argv[i + 1], (size_t)(*argc - i - 1 + 1) * sizeof(*argv));
		*argc -= taken;
		i = at;
	}
	return 0;
}
