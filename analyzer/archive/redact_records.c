/* One record's redacted copy: the records that hold strings a person could
 * be recognised by (process command lines, launcher environment, cgroup
 * paths (container, pod and job ids: one token each, as a host name), mapping
 * and symbol-file paths, Python file names, attach messages) are framed
 * again around their redacted strings: lengths updated, size a multiple of
 * 8, padding zero (format/SPEC.md sections 5 and 7).  Raw user stacks
 * keep their size, with the words that can only be text zeroed.  Every
 * other record, and every event, is copied as it is.  Not for the rules themselves
 * (redact.c) nor the file (redact_trace.c).
 *
 * A record whose lengths do not fit its size (a writer bug or a crafted
 * file) keeps its size and fixed part, with every byte after the fixed part
 * zeroed: the analyzer refuses it exactly as it refused the original, and
 * nothing of it can leak. */
#include "redact_impl.h"
#include "frec_format.h"
#include "frec_records.h"
#include "events.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int rd_record_redacted(uint16_t type, uint32_t *fixed_size)
{
	uint32_t fixed;
	switch (type) {
	case FR_REC_PROCESS: fixed = sizeof(struct fr_rec_process); break;
	case FR_REC_MAPPING: fixed = sizeof(struct fr_rec_mapping); break;
	case FR_REC_DSO: fixed = sizeof(struct fr_rec_dso); break;
	case FR_REC_PROC_ENV: fixed = sizeof(struct fr_rec_proc_env); break;
	case FR_REC_PROC_CGROUP: fixed = sizeof(struct fr_rec_proc_cgroup); break;
	case FR_REC_ATTACH: fixed = sizeof(struct fr_rec_attach); break;
	case FR_REC_PYCODE: fixed = sizeof(struct fr_rec_pycode); break;
	case FR_REC_USTACK: fixed = sizeof(struct fr_rec_ustack); break;
	case FR_EV_FD_PATH: fixed = sizeof(struct fr_ev_fd_path); break;
	default: return 0;
	}
	if (fixed_size)
		*fixed_size = fixed;
	return 1;
}

/* The malformed case: same size, fixed part kept, the rest zero. */
static int zero_variable(const uint8_t *rec, uint32_t size, uint32_t fixed, struct rd_buf *out)
{
	if (fixed > size)
		fixed = sizeof(struct fr_rec_hdr);
	return rd_put(out, rec, fixed) || rd_zeros(out, size - fixed);
}

/* Pads out to a multiple of 8 and writes the final size into the header. */
static int finish(struct rd_buf *out)
{
	if (rd_zeros(out, FR_ALIGN8(out->len) - out->len))
		return -1;
	if (out->len > FR_MAX_CHUNK_RAW)
		return 0; /* rd_record falls back; the size field is not written */
	uint32_t size = (uint32_t)out->len;
	memcpy(out->p, &size, sizeof(size)); /* fr_rec_hdr.size comes first */
	return 0;
}

/* Redacts one string into out and returns its new length through *len;
 * -1 out of memory, or 1 when it does not fit max bytes (a u16 length). */
typedef int (*rule_fn)(struct redactor *, const char *, size_t, struct rd_buf *);
static int put_rule(struct redactor *r, rule_fn rule, const uint8_t *s, size_t n, size_t max,
		    struct rd_buf *out, size_t *len)
{
	size_t at = out->len;
	if (rule(r, (const char *)s, n, out))
		return -1;
	*len = out->len - at;
	return *len > max ? 1 : 0;
}

/* A length that no longer fits its field: the string is cut, as the
 * recorder cuts a long one (a token is never cut: it is short). */
static void clamp(struct rd_buf *out, size_t at, size_t *len, size_t max)
{
	if (*len > max) {
		out->len = at + max;
		*len = max;
	}
}

/* n bytes of NUL-separated strings, each through rule. */
static int put_list(struct redactor *r, rule_fn rule, const uint8_t *s, size_t n,
		    struct rd_buf *out)
{
	for (size_t at = 0; at < n;) {
		const uint8_t *end = memchr(s + at, '\0', n - at);
		size_t len = end ? (size_t)(end - (s + at)) : n - at;
		if ((len && rule(r, (const char *)s + at, len, out)) || (end && rd_put(out, "", 1)))
			return -1;
		at += len + (end ? 1 : 0);
	}
	return 0;
}

static int redact_process(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_process p;
	memcpy(&p, rec, sizeof(p));
	if (p.cmdline_len > size - sizeof(p))
		return zero_variable(rec, size, sizeof(p), out);
	if (rd_put(out, &p, sizeof(p)) ||
	    rd_argv(r, (const char *)rec + sizeof(p), p.cmdline_len, out))
		return -1;
	p.cmdline_len = (uint32_t)(out->len - sizeof(p));
	memcpy(out->p + offsetof(struct fr_rec_process, cmdline_len), &p.cmdline_len,
	       sizeof(p.cmdline_len));
	return finish(out);
}

static int redact_proc_env(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_proc_env e;
	memcpy(&e, rec, sizeof(e));
	if (e.len > size - sizeof(e))
		return zero_variable(rec, size, sizeof(e), out);
	if (rd_put(out, &e, sizeof(e)) || put_list(r, rd_env, rec + sizeof(e), e.len, out))
		return -1;
	e.len = (uint32_t)(out->len - sizeof(e));
	memcpy(out->p + offsetof(struct fr_rec_proc_env, len), &e.len, sizeof(e.len));
	return finish(out);
}

/* A cgroup path names the container, pod or batch job: one token for the
 * whole path, as a host name gets (the same path, the same token). */
static int rd_cgroup(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	return rd_token(r, RD_HOST, s, n, out);
}

static int redact_proc_cgroup(struct redactor *r, const uint8_t *rec, uint32_t size,
			      struct rd_buf *out)
{
	struct fr_rec_proc_cgroup c;
	memcpy(&c, rec, sizeof(c));
	if (c.len > size - sizeof(c))
		return zero_variable(rec, size, sizeof(c), out);
	size_t len;
	if (rd_put(out, &c, sizeof(c)) ||
	    put_rule(r, rd_cgroup, rec + sizeof(c), c.len, FR_CGROUP_PATH_MAX, out, &len) < 0)
		return -1;
	clamp(out, sizeof(c), &len, FR_CGROUP_PATH_MAX);
	c.len = (uint32_t)len;
	memcpy(out->p + offsetof(struct fr_rec_proc_cgroup, len), &c.len, sizeof(c.len));
	return finish(out);
}

static int redact_mapping(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_mapping m;
	memcpy(&m, rec, sizeof(m));
	if (m.path_len > size - sizeof(m))
		return zero_variable(rec, size, sizeof(m), out);
	size_t len;
	if (rd_put(out, &m, sizeof(m)) ||
	    put_rule(r, rd_path, rec + sizeof(m), m.path_len, UINT16_MAX, out, &len) < 0)
		return -1;
	clamp(out, sizeof(m), &len, UINT16_MAX);
	m.path_len = (uint16_t)len;
	memcpy(out->p + offsetof(struct fr_rec_mapping, path_len), &m.path_len, sizeof(m.path_len));
	return finish(out);
}

/* path, padding to 8, nsyms symbols, strtab, padding: only the path
 * changes, the symbols and their names move with it. */
static int redact_dso(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_dso d;
	memcpy(&d, rec, sizeof(d));
	uint64_t off = sizeof(d);
	uint64_t syms_bytes = (uint64_t)d.nsyms * sizeof(struct fr_dso_sym);
	if (d.path_len > size - off)
		return zero_variable(rec, size, sizeof(d), out);
	uint64_t syms_at = off + FR_ALIGN8((uint64_t)d.path_len);
	if (syms_at > size || syms_bytes > size - syms_at ||
	    d.strtab_len > size - syms_at - syms_bytes)
		return zero_variable(rec, size, sizeof(d), out);
	size_t len;
	if (rd_put(out, &d, sizeof(d)) ||
	    put_rule(r, rd_path, rec + off, d.path_len, UINT16_MAX, out, &len) < 0)
		return -1;
	clamp(out, sizeof(d), &len, UINT16_MAX);
	d.path_len = (uint16_t)len;
	memcpy(out->p + offsetof(struct fr_rec_dso, path_len), &d.path_len, sizeof(d.path_len));
	if (rd_zeros(out, FR_ALIGN8(out->len) - out->len) ||
	    rd_put(out, rec + syms_at, (size_t)(syms_bytes + d.strtab_len)))
		return -1;
	return finish(out);
}

/* qualified name (kept), file name (redacted), line table (kept). */
static int redact_pycode(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_pycode c;
	memcpy(&c, rec, sizeof(c));
	if ((uint64_t)c.qualname_len + c.filename_len + c.linetable_len > size - sizeof(c))
		return zero_variable(rec, size, sizeof(c), out);
	const uint8_t *qual = rec + sizeof(c), *file = qual + c.qualname_len,
		      *table = file + c.filename_len;
	size_t len, at;
	if (rd_put(out, &c, sizeof(c)) || rd_put(out, qual, c.qualname_len))
		return -1;
	at = out->len;
	if (put_rule(r, rd_path, file, c.filename_len, UINT16_MAX, out, &len) < 0)
		return -1;
	clamp(out, at, &len, UINT16_MAX);
	c.filename_len = (uint16_t)len;
	memcpy(out->p + offsetof(struct fr_rec_pycode, filename_len), &c.filename_len,
	       sizeof(c.filename_len));
	if (rd_put(out, table, c.linetable_len))
		return -1;
	return finish(out);
}

static int redact_attach(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_attach a;
	memcpy(&a, rec, sizeof(a));
	if (a.text_len > size - sizeof(a))
		return zero_variable(rec, size, sizeof(a), out);
	if (rd_put(out, &a, sizeof(a)) ||
	    rd_attach_text(r, (const char *)rec + sizeof(a), a.text_len, out))
		return -1;
	a.text_len = (uint32_t)(out->len - sizeof(a));
	memcpy(out->p + offsetof(struct fr_rec_attach, text_len), &a.text_len, sizeof(a.text_len));
	return finish(out);
}

/* A raw user stack (--stack dwarf) is whatever the thread had on its
 * stack, and at the top of a main thread's stack the kernel put its
 * command line and environment, which a 16 KiB copy reaches when the stack
 * is shallow.  Every 8-byte word of the copy (aligned as in memory) whose
 * bytes are all printable ASCII is zeroed.  Unwinding reads return
 * addresses and saved frame pointers, user-space addresses whose top two
 * bytes are zero, never such a word: the stacks unwind as before.  A
 * string's unaligned ends (up to 7 bytes each) stay. */
static int printable(uint8_t c)
{
	return c >= 0x20 && c < 0x7f;
}

static int redact_ustack(const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_ustack u;
	memcpy(&u, rec, sizeof(u));
	uint64_t at = sizeof(u) + (uint64_t)u.n_kernel * 8 + (uint64_t)u.n_py * sizeof(struct fr_py_frame);
	if (at > size || u.stack_len > size - at)
		return zero_variable(rec, size, sizeof(u), out);
	if (rd_put(out, rec, size))
		return -1;
	uint8_t *stack = out->p + at;
	/* the copy starts at rsp: word boundaries are where rsp + i is a multiple of 8 */
	size_t i = (size_t)((8 - u.regs[7] % 8) % 8);
	for (; i + 8 <= u.stack_len; i += 8) {
		int all = 1;
		for (int k = 0; k < 8 && all; k++)
			all = printable(stack[i + k]);
		if (all)
			memset(stack + i, 0, 8);
	}
	return 0;
}

/* The one event with a string: which file an fd names.  The path goes
 * through the path rule into its fixed 256-byte field (a token with its
 * extension is short; a kept system path longer than the field is cut as
 * the recorder cuts it), the record keeps its size. */
static int redact_fd_path(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_ev_fd_path e;
	memcpy(&e, rec, sizeof(e));
	size_t n = strnlen(e.path, sizeof(e.path));
	if (e.path_len < n)
		n = e.path_len;
	struct rd_buf tmp = { 0 };
	if (rd_path(r, e.path, n, &tmp)) {
		free(tmp.p);
		return -1;
	}
	size_t len = tmp.len < sizeof(e.path) - 1 ? tmp.len : sizeof(e.path) - 1;
	memset(e.path, 0, sizeof(e.path));
	if (len)
		memcpy(e.path, tmp.p, len);
	free(tmp.p);
	e.path_len = (uint16_t)len;
	return rd_put(out, &e, sizeof(e)) || rd_zeros(out, size - sizeof(e));
}

int rd_record(struct redactor *r, const uint8_t *rec, uint32_t size, struct rd_buf *out)
{
	struct fr_rec_hdr h;
	memcpy(&h, rec, sizeof(h));
	out->len = 0;
	uint32_t fixed;
	if (!rd_record_redacted(h.type, &fixed))
		return rd_put(out, rec, size);
	if (size < fixed)
		return zero_variable(rec, size, fixed, out);
	int rc = 0;
	switch (h.type) {
	case FR_REC_PROCESS: rc = redact_process(r, rec, size, out); break;
	case FR_REC_PROC_ENV: rc = redact_proc_env(r, rec, size, out); break;
	case FR_REC_PROC_CGROUP: rc = redact_proc_cgroup(r, rec, size, out); break;
	case FR_REC_MAPPING: rc = redact_mapping(r, rec, size, out); break;
	case FR_REC_DSO: rc = redact_dso(r, rec, size, out); break;
	case FR_REC_PYCODE: rc = redact_pycode(r, rec, size, out); break;
	case FR_REC_ATTACH: rc = redact_attach(r, rec, size, out); break;
	case FR_REC_USTACK: rc = redact_ustack(rec, size, out); break;
	case FR_EV_FD_PATH: rc = redact_fd_path(r, rec, size, out); break;
	}
	if (rc == 0 && out->len > FR_MAX_CHUNK_RAW) {
		/* tokens longer than thousands of tiny values: no chunk could
		 * hold the copy; its strings are left out as for a malformed one */
		out->len = 0;
		rc = zero_variable(rec, size, fixed, out);
	}
	return rc;
}
