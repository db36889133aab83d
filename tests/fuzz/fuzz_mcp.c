/* libFuzzer target for the MCP server (analyzer/mcp/): the input is what a
 * client sends on stdin, served by mcp_serve over an empty root (every
 * protocol path, argument check and path confinement; tools that find no
 * trace answer isError) into /dev/null; and the same bytes through
 * mcp_clean, whose output must hold no control character, no bidi,
 * zero-width or tag character, valid UTF-8 only, and no line over the cap
 * (plus its marker). */
#include "fuzz_input.h"
#include "mcp_json.h"
#include "mcp_sanitize.h"
#include "mcp_server.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mcp_roots roots;
static int ready;

/* Every code point the cleaner promises to drop (mcp_sanitize.h), written
 * out here again rather than shared, so that a narrowed list shows. */
static int invisible(uint32_t cp)
{
	return (cp >= 0x7f && cp < 0xa0) || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
	       (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff ||
	       (cp >= 0xe0000 && cp <= 0xe0fff);
}

static void check_clean(const uint8_t *data, size_t size)
{
	char *c = mcp_clean((const char *)data, size, 0, NULL);
	if (!c)
		return;
	size_t n = strlen(c);
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)c[i];
		if (b < 0x20 || b == 0x7f)
			abort();
		if (b < 0x80 || (b & 0xc0) == 0x80)
			continue;
		/* a lead byte: the code point it starts (validity is checked below) */
		size_t len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
		if (i + len > n)
			abort();
		uint32_t cp = b & (0x7f >> len);
		for (size_t k = 1; k < len; k++)
			cp = cp << 6 | ((unsigned char)c[i + k] & 0x3f);
		if (invisible(cp))
			abort();
	}
	if (n > MCP_STRING_CAP + 32)
		abort();
	/* valid UTF-8: it parses as a JSON string */
	char *quoted = malloc(n + 3);
	if (quoted) {
		quoted[0] = '"';
		memcpy(quoted + 1, c, n);
		quoted[n + 1] = '"';
		char err[64];
		struct mj *v = NULL;
		if (!memchr(c, '"', n) && !memchr(c, '\\', n) &&
		    !(v = mj_parse(quoted, n + 2, err, sizeof(err))))
			abort();
		mj_free(v);
		free(quoted);
	}
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready) {
		char dir[] = "/tmp/fuzz_mcp_rootXXXXXX";
		char err[128];
		const char *r[] = { mkdtemp(dir) };
		if (!r[0] || mcp_roots_init(&roots, r, 1, err, sizeof(err)))
			return 0;
		ready = 1;
	}
	check_clean(data, size);
	int in = fuzz_input_fd(data, size), out = open("/dev/null", O_WRONLY);
	if (in >= 0 && out >= 0) {
		struct mcp_ctx ctx = { .roots = &roots, .cap_tokens = MCP_MAX_TOKENS };
		mcp_serve(in, out, &ctx);
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return 0;
}
