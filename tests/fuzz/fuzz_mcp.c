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
		/* U+200B-200F, U+202A-202E, U+2060-2064, U+2066-2069: E2 80 8B..8F, E2 80 AA..AE, E2 81 A0..A9 */
		if (b == 0xe2 && i + 2 < n && (unsigned char)c[i + 1] == 0x80 &&
		    (((unsigned char)c[i + 2] >= 0x8b && (unsigned char)c[i + 2] <= 0x8f) ||
		     ((unsigned char)c[i + 2] >= 0xaa && (unsigned char)c[i + 2] <= 0xae)))
			abort();
		if (b == 0xf3 && i + 1 < n && (unsigned char)c[i + 1] == 0xa0) /* U+E0000 block */
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
