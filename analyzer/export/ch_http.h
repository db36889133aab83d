/* The one thing the ClickHouse export needs from the network: POST a query
 * (and, for an INSERT, its rows) to a server's HTTP interface and read the
 * answer.  Two implementations: ch_http_curl.c (libcurl) and
 * ch_http_none.c (a build without libcurl, e.g. the static analyzer), so
 * the rest of the export never depends on how the bytes travel.  Not for
 * building queries or rows (ch_rows.c, ch_schema.c). */
#ifndef FLIGHTREC_CH_HTTP_H
#define FLIGHTREC_CH_HTTP_H

#include <stddef.h>

/* Largest reply kept (a SELECT's answer); more is an error. */
#define CH_HTTP_MAX_REPLY (16u << 20)

/* POSTs body (len bytes) to url with ?query=QUERY (query URL-encoded
 * here); with no body (len 0), the query itself is the body, so that its
 * length is bounded by the server's max_query_size (256 KiB by default),
 * not by its limit on a URL.  0 when the server answered 200, with its reply in
 * *reply (malloc'd, NUL-terminated; NULL allowed to drop it).  -1
 * otherwise, with one line in err: what failed (connection refused, the
 * server's first line of error text and its HTTP status). */
int ch_http_post(const char *url, const char *query, const char *body, size_t len,
		 char **reply, char *err, size_t errlen);

/* Nonzero when this build can reach a server at all. */
int ch_http_available(void);

#endif
