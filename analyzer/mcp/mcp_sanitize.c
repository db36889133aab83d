/* Normalising, capping and counting hostile strings (mcp_sanitize.h). */
#include "mcp_sanitize.h"
#include "mcp_json.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const canaries[] = {
	"ignore previous", "ignore all previous", "disregard previous", "system:", "assistant:",
	"<|", "</tool", "you are now", "new instructions", "## instructions",
};

static int dropped(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
	       (cp >= 0x2066 && cp <= 0x2069) || (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff ||
	       (cp >= 0xe0000 && cp <= 0xe0fff);
}

/* The code point at s (n bytes left) and its length; U+FFFD, 1 when invalid. */
static uint32_t decode(const unsigned char *s, size_t n, size_t *k)
{
	*k = 1;
	if (s[0] < 0x80)
		return s[0];
	size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		   : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (!len || len > n)
		return 0xfffd;
	uint32_t cp = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0xfffd;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0xfffd;
	*k = len;
	return cp;
}

static int suspicious(const char *s)
{
	char low[MCP_STRING_CAP + 64];
	size_t n = 0;
	for (; s[n] && n + 1 < sizeof(low); n++)
		low[n] = (char)tolower((unsigned char)s[n]);
	low[n] = '\0';
	for (size_t i = 0; i < sizeof(canaries) / sizeof(canaries[0]); i++)
		if (strstr(low, canaries[i]))
			return 1;
	return 0;
}

char *mcp_clean(const char *s, size_t len, int keep_newlines, struct mcp_clean_stats *st)
{
	/* worst case: every byte becomes U+FFFD (3 bytes) or a 2-byte escape */
	char *out = malloc(len * 3 + 64);
	if (!out)
		return NULL;
	size_t n = 0, line = 0, cut_from = 0;
	int changed = 0, capped = 0;
	size_t lost = 0;
	for (size_t i = 0; i < len;) {
		size_t k;
		uint32_t cp = decode((const unsigned char *)s + i, len - i, &k);
		const char *esc = NULL;
		if (cp == '\n' && keep_newlines) {
			if (lost) {
				n += (size_t)snprintf(out + n, 32, "...[+%zu B]", lost);
				lost = 0;
			}
			out[n++] = '\n';
			line = 0;
			i += k;
			continue;
		}
		if (cp == '\n')
			esc = "\\n";
		else if (cp == '\r')
			esc = "\\r";
		else if (cp == '\t')
			esc = keep_newlines ? "\t" : "\\t";
		if (cp == 0xfffd && k == 1)
			changed = 1;
		if (!esc && dropped(cp)) {
			changed = 1;
			i += k;
			continue;
		}
		size_t add = esc ? strlen(esc) : (cp == 0xfffd && k == 1 ? 3 : k);
		if (line + add > MCP_STRING_CAP) {
			if (!lost)
				cut_from = n;
			lost += k;
			capped = 1;
			i += k;
			continue;
		}
		(void)cut_from;
		if (esc) {
			memcpy(out + n, esc, add);
			changed |= !keep_newlines || cp != '\t';
		} else if (cp == 0xfffd && k == 1) {
			memcpy(out + n, "\xef\xbf\xbd", 3);
		} else {
			memcpy(out + n, s + i, k);
		}
		n += add;
		line += add;
		i += k;
	}
	if (lost)
		n += (size_t)snprintf(out + n, 32, "...[+%zu B]", lost);
	out[n] = '\0';
	if (st) {
		st->strings++;
		st->changed += changed;
		st->capped += capped;
		st->suspicious += suspicious(out);
	}
	return out;
}

int mcp_clean_tree(struct mj *v, struct mcp_clean_stats *st)
{
	if (v->type == MJ_STR) {
		char *c = mcp_clean(v->str, v->len, 0, st);
		if (!c)
			return -1;
		free(v->str);
		v->str = c;
		v->len = strlen(c);
		return 0;
	}
	for (size_t i = 0; (v->type == MJ_ARR || v->type == MJ_OBJ) && i < v->n; i++)
		if (mcp_clean_tree(v->items[i], st))
			return -1;
	return 0;
}
