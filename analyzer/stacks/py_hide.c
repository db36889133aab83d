/* See py_hide.h. */
#include "py_hide.h"
#include "flame_tree.h"
#include "name_index.h"
#include "trace_set.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The "(...)" part of a Python frame's name, or NULL. */
static const char *python_source_part(const char *name)
{
	/* "qualname (file.py:12)", "qualname (<frozen ...>)" */
	size_t n = strlen(name);
	if (n < 4 || name[n - 1] != ')')
		return NULL;
	const char *open = NULL;
	for (const char *p = name; (p = strstr(p, " (")); p++)
		open = p;
	if (!open || open == name)
		return NULL;
	const char *in = open + 2;
	if (memchr(in, '(', (size_t)(name + n - 1 - in)))
		return NULL;
	return in[0] == '<' || strstr(in, ".py") ? in : NULL;
}

int py_is_python_frame(const char *name)
{
	/* pyframes.c's name for a code object the trace does not describe */
	return python_source_part(name) != NULL || strcmp(name, "[unknown python]") == 0;
}

int py_frame_source(const char *name, char *file, size_t len, int *line)
{
	const char *in = python_source_part(name);
	if (!in || !len)
		return 0;
	size_t n = strlen(in) - 1; /* without ')' */
	const char *colon = NULL;
	for (const char *p = in; p < in + n; p++)
		if (*p == ':')
			colon = p;
	*line = 0;
	if (colon && colon + 1 < in + n && strspn(colon + 1, "0123456789") == (size_t)(in + n - colon - 1)) {
		*line = atoi(colon + 1);
		n = (size_t)(colon - in);
	}
	if (n >= len)
		n = len - 1;
	memcpy(file, in, n);
	file[n] = 0;
	return 1;
}

struct py_hide {
	struct name_index names; /* symbol names of the interpreter's files */
};

/* libpython3.11.so.1.0, python3, python3.12d: the interpreter's files. */
static int is_interpreter_file(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libpython", 9) == 0 ||
	       (strncmp(base, "python", 6) == 0 && strspn(base + 6, "0123456789.dm") == strlen(base + 6));
}

struct py_hide *py_hide_new(struct trace_set *ts)
{
	struct py_hide *ph = calloc(1, sizeof(*ph));
	if (!ph)
		return NULL;
	name_index_init(&ph->names);
	for (size_t i = 0; ts && i < trace_set_count(ts); i++) {
		const struct trace_file *f = trace_set_file(ts, i);
		for (size_t d = 0; d < f->n_dsos; d++) {
			const struct ts_dso *dso = &f->dsos[d];
			if (dso->kind != 0 || !is_interpreter_file(dso->path))
				continue;
			for (uint32_t k = 0; k < dso->nsyms; k++) {
				const char *name = dso->strtab + dso->syms[k].name_off;
				if (name[0] && name_index_of(&ph->names, name) < 0) {
					py_hide_free(ph);
					return NULL;
				}
			}
		}
	}
	return ph;
}

void py_hide_free(struct py_hide *ph)
{
	if (!ph)
		return;
	name_index_free(&ph->names);
	free(ph);
}

int py_is_interpreter_frame(const struct py_hide *ph, const char *name)
{
	if (py_is_python_frame(name))
		return 0;
	if (name_index_find(&ph->names, name) >= 0)
		return 1;
	/* "libpython3.11.so.1.0+0x1a2b", "python3.11+0x4f00" */
	const char *plus = strstr(name, "+0x");
	if (!plus || (size_t)(plus - name) >= 256)
		return 0;
	char file[256];
	memcpy(file, name, (size_t)(plus - name));
	file[plus - name] = 0;
	return is_interpreter_file(file);
}

size_t py_hide_mask(const struct py_hide *ph, const char *const *names, size_t n,
		    unsigned char *hide)
{
	size_t first = n, last = 0, hidden = 0;
	for (size_t i = 0; i < n; i++) {
		hide[i] = 0;
		if (py_is_python_frame(names[i])) {
			if (first == n)
				first = i;
			last = i;
		}
	}
	for (size_t i = first + 1; first < n && i < last; i++)
		if (py_is_interpreter_frame(ph, names[i])) {
			hide[i] = 1;
			hidden++;
		}
	return hidden;
}

struct flame_tree *py_hide_tree(const struct py_hide *ph, const struct flame_tree *t)
{
	struct flame_tree *out = flame_tree_new();
	size_t count = t ? flame_tree_count(t) : 0, cap = 0;
	const char **names = NULL;
	unsigned char *hide = NULL;
	if (!out)
		return NULL;
	for (uint32_t i = 1; i < count; i++) {
		const struct flame_node *n = flame_tree_node(t, i);
		if (!n->self)
			continue;
		if (n->depth > cap) {
			cap = n->depth;
			const char **grown = realloc(names, cap * sizeof(*names));
			unsigned char *grown_hide = grown ? realloc(hide, cap) : NULL;
			if (grown)
				names = grown;
			if (!grown || !grown_hide)
				goto oom;
			hide = grown_hide;
		}
		size_t depth = n->depth;
		for (const struct flame_node *p = n; p->depth; p = flame_tree_node(t, p->parent))
			names[p->depth - 1] = p->name;
		py_hide_mask(ph, names, depth, hide);
		size_t kept = 0;
		for (size_t k = 0; k < depth; k++)
			if (!hide[k])
				names[kept++] = names[k];
		if (flame_tree_add(out, names, kept, n->self))
			goto oom;
	}
	free(names);
	free(hide);
	return out;
oom:
	free(names);
	free(hide);
	flame_tree_free(out);
	return NULL;
}
