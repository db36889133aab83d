/* /proc/PID/maps line parser (see proc_maps.h).  The kernel's format
 * (fs/proc/task_mmu.c show_vma_header_prefix):
 *   "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " padded with spaces, path
 * Every field is checked against what remains of the line before it is
 * read; numbers that overflow 64 bits are refused, not wrapped. */
#include "inspect/proc_maps.h"

#include <string.h>

struct cursor {
	const char *p, *end;
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1 to 16 hex digits */
static int take_hex(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0, d;
	while (c->p < c->end && (d = hex_digit(*c->p)) >= 0) {
		if (++n > 16)
			return -1;
		v = v << 4 | (uint64_t)d;
		c->p++;
	}
	*out = v;
	return n ? 0 : -1;
}

static int take_dec(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	int n = 0;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		uint64_t d = (uint64_t)(*c->p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		n++;
		c->p++;
	}
	*out = v;
	return n ? 0 : -1;
}

static int take_char(struct cursor *c, char want)
{
	if (c->p >= c->end || *c->p != want)
		return -1;
	c->p++;
	return 0;
}

int proc_maps_parse_line(const char *line, size_t len, struct proc_maps_entry *out)
{
	struct cursor c = {line, line + len};
	uint64_t maj, min;

	memset(out, 0, sizeof(*out));
	if (len && line[len - 1] == '\n')
		c.end--;
	if (take_hex(&c, &out->start) || take_char(&c, '-') || take_hex(&c, &out->end) ||
	    take_char(&c, ' ') || out->start > out->end)
		return -1;
	if (c.end - c.p < 4)
		return -1;
	memcpy(out->perms, c.p, 4);
	for (int i = 0; i < 4; i++)
		if (!out->perms[i] || !strchr("rwxps-", out->perms[i]))
			return -1;
	c.p += 4;
	if (take_char(&c, ' ') || take_hex(&c, &out->offset) || take_char(&c, ' ') ||
	    take_hex(&c, &maj) || take_char(&c, ':') || take_hex(&c, &min) ||
	    take_char(&c, ' ') || take_dec(&c, &out->ino) || maj > UINT32_MAX ||
	    min > UINT32_MAX)
		return -1;
	out->dev_major = (uint32_t)maj;
	out->dev_minor = (uint32_t)min;
	/* the padding; the path keeps any spaces of its own after that */
	if (c.p < c.end && take_char(&c, ' '))
		return -1;
	while (c.p < c.end && *c.p == ' ')
		c.p++;
	out->path = c.p;
	out->path_len = (size_t)(c.end - c.p);
	/* a NUL would make the C string callers build name a shorter path */
	if (out->path_len > PROC_MAPS_PATH_MAX || memchr(out->path, 0, out->path_len))
		return -1;
	return 0;
}
