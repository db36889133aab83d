/* Frames an agent can act on (frame_pick.h). */
#include "frame_pick.h"
#include "hmap.h"
#include "trace_set.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define FRAME_CHARS 64

struct frame_owners {
	struct hmap names; /* (FNV-1a of the shown name, its length) -> 1 */
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

int frame_system_path(const char *path)
{
	static const char *const prefixes[] = { "/usr/", "/lib/", "/lib64/", "/lib32/", "/libx32/",
						"/bin/", "/sbin/", "/opt/conda/", "/snap/", "/nix/" };
	static const char *const parts[] = { "/site-packages/", "/dist-packages/", "/lib/python" };
	if (!path[0] || path[0] == '[')
		return 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return 1;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(path, parts[i]))
			return 1;
	return 0;
}

static void owners_free(void *p)
{
	struct frame_owners *o = p;
	if (o) {
		hmap_free(&o->names);
		free(o);
	}
}

static int add_name(struct frame_owners *o, const char *raw)
{
	const char *shown = raw;
	char *demangled = NULL;
	if (raw[0] == '_' && raw[1] == 'Z') {
		int status = -1;
		demangled = __cxa_demangle(raw, NULL, NULL, &status);
		if (demangled && status == 0)
			shown = demangled;
	}
	size_t n = strlen(shown);
	int rc = hmap_put(&o->names, fnv(shown, n), n, 1);
	free(demangled);
	return rc;
}

const struct frame_owners *frame_owners_of(struct trace_set *ts)
{
	struct frame_owners *o = trace_set_slot(ts, TS_SLOT_FRAME_OWNERS);
	if (o)
		return o;
	if (!(o = calloc(1, sizeof(*o))))
		return NULL;
	hmap_init(&o->names);
	for (size_t fi = 0; fi < trace_set_count(ts); fi++) {
		const struct trace_file *f = trace_set_file(ts, fi);
		for (size_t d = 0; d < f->n_dsos; d++) {
			const struct ts_dso *dso = &f->dsos[d];
			if (dso->kind != 0 || frame_system_path(dso->path))
				continue;
			for (uint32_t k = 0; k < dso->nsyms; k++) {
				const char *raw = dso->strtab + dso->syms[k].name_off;
				if (raw[0] && add_name(o, raw)) {
					owners_free(o);
					return NULL;
				}
			}
		}
	}
	trace_set_put_slot(ts, TS_SLOT_FRAME_OWNERS, o, owners_free);
	return o;
}

static int startup(const char *name)
{
	static const char *const names[] = {
		"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
		"_dl_start_user", "start_thread", "clone", "clone3", "__clone", "__clone3",
		"__GI___clone3", "__GI___clone",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	return 0;
}

/* "name (file.py:12)" or "name (file.py)" */
static int python_frame(const char *name)
{
	size_t n = strlen(name);
	const char *open = strstr(name, " (");
	return open && open > name && n > 2 && name[n - 1] == ')' && !strchr(open + 2, '(');
}

/* module+0xHEX */
static int unnamed(const char *name)
{
	if (!strcmp(name, "[unknown]") || !strcmp(name, "[lost]"))
		return 1;
	const char *p = strstr(name, "+0x");
	if (!p || p == name)
		return 0;
	for (p += 3; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

/* CPython's internals: the C API (Py*, _Py*), and the call machinery
 * between a Python frame and the C function it calls. */
static int interpreter(const char *name)
{
	static const char *const prefixes[] = {
		"_Py", "Py", "method_vectorcall", "cfunction_", "slot_tp_", "vectorcall_",
		"call_function", "object_vacall", "builtin_", "function_code_fastcall",
		"_call_function", "run_mod", "run_eval_code_obj", "pymain_", "libpython",
	};
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(name, prefixes[i], n) &&
		    (i != 1 || (name[n] >= 'A' && name[n] <= 'Z'))) /* Py_..., PyEval, not Python */
			return 1;
	}
	return !strncmp(name, "python", 6) && strstr(name, "+0x");
}

enum frame_class frame_classify(const struct frame_owners *owners, const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (!n)
		return FC_UNNAMED;
	if (n > 4 && !strcmp(name + n - 4, "_[k]"))
		return FC_KERNEL;
	if (startup(name))
		return FC_STARTUP;
	if (python_frame(name))
		return FC_PYTHON;
	if (interpreter(name))
		return FC_INTERP;
	if (unnamed(name))
		return FC_UNNAMED;
	uint64_t v;
	if (owners && hmap_get(&owners->names, fnv(name, n), n, &v))
		return FC_OWN;
	return FC_LIB;
}

size_t frame_pick(const struct frame_owners *owners, const char *const *frames, size_t n,
		  unsigned char *keep)
{
	int user_code = 0;
	size_t innermost = SIZE_MAX, kept = 0;
	for (size_t i = 0; i < n; i++) {
		enum frame_class c = frame_classify(owners, frames[i]);
		keep[i] = c == FC_PYTHON || c == FC_OWN;
		user_code |= keep[i];
		if (c == FC_LIB || c == FC_OWN)
			innermost = i;
	}
	for (size_t i = 0; i < n; i++) {
		if (!keep[i] && (i == innermost ||
				 (!user_code && frame_classify(owners, frames[i]) == FC_LIB)))
			keep[i] = 1;
		kept += keep[i];
	}
	return kept;
}

static void put(char *buf, size_t len, size_t *at, const char *s, size_t max)
{
	size_t n = strlen(s), cut = n > max;
	if (cut)
		n = max > 3 ? max - 3 : 0;
	for (size_t i = 0; i < n && *at + 1 < len; i++)
		buf[(*at)++] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
	for (size_t i = 0; cut && i < 3 && *at + 1 < len; i++)
		buf[(*at)++] = '.';
	buf[*at] = '\0';
}

const char *frame_pick_text(const struct frame_owners *owners, const char *const *frames,
			    size_t n, size_t max, char *buf, size_t len)
{
	unsigned char keep[1024];
	size_t m = n < sizeof(keep) ? n : sizeof(keep);
	const char *const *fr = frames + (n - m); /* the innermost part of a deeper stack */
	size_t user_end = m; /* the kernel part: its innermost frame only */
	while (user_end > 0 && frame_classify(owners, fr[user_end - 1]) == FC_KERNEL)
		user_end--;
	frame_pick(owners, fr, user_end, keep);
	size_t first = user_end, shown = 0; /* the innermost max picked frames */
	while (first > 0 && shown < max) {
		first--;
		shown += keep[first];
	}
	while (first > 0 && !keep[first - 1] && shown >= max)
		first--; /* the collapsed run in front of the first shown frame */
	size_t at = 0;
	buf[0] = '\0';
	int more = n > m;
	for (size_t i = 0; i < first && !more; i++)
		more = keep[i] || frame_classify(owners, fr[i]) != FC_STARTUP;
	if (more)
		put(buf, len, &at, "...", 3);
	for (size_t i = first; i < user_end;) {
		if (keep[i]) {
			if (at)
				put(buf, len, &at, ";", 1);
			put(buf, len, &at, fr[i] ? fr[i] : "[unknown]", FRAME_CHARS);
			i++;
			continue;
		}
		size_t run = 0, j = i;
		for (; j < user_end && !keep[j]; j++)
			run += frame_classify(owners, fr[j]) != FC_STARTUP;
		if (run && (i > 0 || j == user_end)) { /* not the interpreter's start at the root */
			char mark[32];
			snprintf(mark, sizeof(mark), "[+%zu]", run);
			if (at)
				put(buf, len, &at, ";", 1);
			put(buf, len, &at, mark, sizeof(mark));
		}
		i = j;
	}
	if (user_end < m) {
		if (at)
			put(buf, len, &at, ";", 1);
		if (m - 1 > user_end)
			put(buf, len, &at, "...;", 4);
		put(buf, len, &at, fr[m - 1], FRAME_CHARS);
	}
	if (!at)
		put(buf, len, &at, "[no frames]", 16);
	return buf;
}
