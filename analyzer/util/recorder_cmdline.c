/* See recorder_cmdline.h.  Words are separated by single spaces (the
 * decoder joined argv so); an argument holding a space is cut in two,
 * which the options read here (numbers) never are. */
#include "recorder_cmdline.h"

#include <stdlib.h>
#include <string.h>

/* Nonzero when the first word's file name starts with "flightrec" and the
 * second is "record". */
static int is_recorder(const char *cmdline)
{
	const char *sp = strchr(cmdline, ' ');
	if (!sp)
		return 0;
	const char *name = cmdline;
	for (const char *p = cmdline; p < sp; p++)
		if (*p == '/')
			name = p + 1;
	return strncmp(name, "flightrec", 9) == 0 && strncmp(sp + 1, "record", 6) == 0 &&
	       (sp[7] == ' ' || !sp[7]);
}

/* The " -- " that ends the recorder's options, or NULL. */
static const char *double_dash(const char *cmdline)
{
	for (const char *p = strstr(cmdline, " --"); p; p = strstr(p + 1, " --"))
		if (p[3] == ' ' || !p[3])
			return p;
	return NULL;
}

const char *recorder_job_command(const char *cmdline)
{
	if (!is_recorder(cmdline))
		return cmdline;
	const char *dd = double_dash(cmdline);
	return dd && dd[3] == ' ' && dd[4] ? dd + 4 : cmdline;
}

unsigned long recorder_option_uint(const char *cmdline, const char *long_name, char short_name,
				   unsigned long def)
{
	if (!is_recorder(cmdline))
		return def;
	const char *end = double_dash(cmdline);
	if (!end)
		end = cmdline + strlen(cmdline);
	size_t ln = strlen(long_name);
	unsigned long v = def;
	for (const char *w = cmdline; w && w < end; w = strchr(w, ' ')) {
		while (*w == ' ')
			w++;
		const char *val = NULL;
		if (strncmp(w, long_name, ln) == 0 && (w[ln] == ' ' || w[ln] == '='))
			val = w + ln + 1;
		else if (short_name && w[0] == '-' && w[1] == short_name)
			val = w[2] && w[2] != ' ' ? w + 2 : w + 2 + (w[2] == ' ');
		if (!val || val >= end)
			continue;
		char *stop;
		unsigned long got = strtoul(val, &stop, 10);
		if (stop != val && (*stop == ' ' || !*stop))
			v = got; /* the last one wins, as with getopt */
	}
	return v;
}
