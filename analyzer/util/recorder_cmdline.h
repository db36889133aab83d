/* What a trace's command line (the recorder's own: `flightrec record -o
 * FILE [options] -- COMMAND ...`, argv joined by spaces) says about the
 * recording: the job's command, and the options that set a rate the
 * trace does not otherwise carry.  Not a full option parser: only the
 * options named here, read as the recorder's getopt would. */
#ifndef FLIGHTREC_RECORDER_CMDLINE_H
#define FLIGHTREC_RECORDER_CMDLINE_H

/* The job's command within cmdline: what follows the recorder's "--", or
 * cmdline itself when it is not a `flightrec record ... -- COMMAND` line
 * (a --pid or --cgroup recording, or a trace another writer made). */
const char *recorder_job_command(const char *cmdline);

/* The value of the recorder option long_name (e.g. "--freq") or its short
 * form short_name ('F'; 0: none) before the "--", or def when the line
 * does not give it (or is not a recorder's). */
unsigned long recorder_option_uint(const char *cmdline, const char *long_name, char short_name,
				   unsigned long def);

#endif
