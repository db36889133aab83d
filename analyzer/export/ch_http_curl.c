/* ch_http.h over libcurl: one easy handle per post (the export makes a few
 * dozen), no redirects, bounded reply, timeouts on connect and on a stalled
 * transfer rather than on the whole request (a large batch may take long
 * on a busy server). */
#include "ch_http.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

struct reply_buf {
	char *data;
	size_t len, cap;
	int too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *user)
{
	struct reply_buf *b = user;
	size_t n = size * nmemb;
	if (b->len + n + 1 > CH_HTTP_MAX_REPLY) {
		b->too_big = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, ptr, n);
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/* The server's error text, first line, bounded: "Code: 60, e.displayText()
 * = DB::Exception: Table x doesn't exist". */
static void first_line(const char *text, char *out, size_t len)
{
	size_t n = 0;
	while (text && text[n] && text[n] != '\n' && n + 1 < len && n < 300)
		n++;
	memcpy(out, text ? text : "", n);
	out[n] = '\0';
}

int ch_http_available(void)
{
	return 1;
}

int ch_http_post(const char *url, const char *query, const char *body, size_t len,
		 char **reply, char *err, size_t errlen)
{
	static int inited;
	if (reply)
		*reply = NULL;
	if (!inited) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
			snprintf(err, errlen, "%s: cannot initialize libcurl", url);
			return -1;
		}
		inited = 1;
	}
	CURL *c = curl_easy_init();
	if (!c) {
		snprintf(err, errlen, "%s: cannot initialize libcurl", url);
		return -1;
	}
	/* A query without rows travels as the body, the server's other way
	 * of taking one: in the URL, a delete naming the recordings of 512
	 * nodes passed the server's limit on a request line (HTTP 400, no
	 * message).  An INSERT's query stays in the URL, its rows the body. */
	int in_body = len == 0;
	char *q = in_body ? NULL : curl_easy_escape(c, query, 0);
	size_t ulen = strlen(url) + (q ? strlen(q) : 0) + 16;
	char *full = malloc(ulen);
	struct reply_buf b = { 0 };
	int rc = -1;
	if ((!in_body && !q) || !full) {
		snprintf(err, errlen, "%s: out of memory", url);
		goto out;
	}
	size_t ul = strlen(url);
	const char *sep = strchr(url, '?') ? "&" : ul && url[ul - 1] == '/' ? "?" : "/?";
	if (in_body)
		snprintf(full, ulen, "%s", url);
	else
		snprintf(full, ulen, "%s%squery=%s", url, sep, q);
	char curl_err[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, in_body ? query : body ? body : "");
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)(in_body ? strlen(query) : len));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 120L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	struct curl_slist *hdrs = curl_slist_append(NULL, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	CURLcode res = curl_easy_perform(c);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);
	if (res != CURLE_OK) {
		if (b.too_big)
			snprintf(err, errlen, "%s: the server's answer exceeds %u MiB", url,
				 CH_HTTP_MAX_REPLY >> 20);
		else
			snprintf(err, errlen, "%s: %s", url, curl_err[0] ? curl_err : curl_easy_strerror(res));
		goto out;
	}
	if (status != 200) {
		char line[320];
		first_line(b.data, line, sizeof(line));
		snprintf(err, errlen, "%s: the server refused (HTTP %ld): %s", url, status,
			 line[0] ? line : "no message");
		goto out;
	}
	if (reply) {
		*reply = b.data ? b.data : calloc(1, 1);
		b.data = NULL;
	}
	rc = 0;
out:
	free(b.data);
	free(full);
	curl_free(q);
	curl_easy_cleanup(c);
	return rc;
}
