/* --lib NAME=PATH: a library file to probe for one family, whether or not
 * the job maps it yet (options.c parses it, lib_attach.c attaches it). */
#ifndef FLIGHTREC_LIB_OPT_H
#define FLIGHTREC_LIB_OPT_H

struct lib_opt {
	unsigned probe; /* PROBE_BIT of one library family (fr_family.h) */
	const char *path;
};

#endif
