/* ch_http.h for a build without libcurl (the static analyzer): every post
 * fails with a line that says so. */
#include "ch_http.h"

#include <stdio.h>

int ch_http_post(const char *url, const char *query, const char *body, size_t len,
		 char **reply, char *err, size_t errlen)
{
	(void)url; (void)query; (void)body; (void)len;
	if (reply)
		*reply = NULL;
	snprintf(err, errlen, "this flightrec-analyze was built without libcurl, so it cannot "
		 "export to ClickHouse; use a build with libcurl4-openssl-dev installed");
	return -1;
}

int ch_http_available(void)
{
	return 0;
}
