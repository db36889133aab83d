/* py-spy's view of a merged Python + native stack: the interpreter's own
 * frames between two Python frames hidden (the eval loop, vectorcall,
 * PyObject_Call, map_next ...), so a Python caller sits right above its
 * Python callee.  Which native frames are the interpreter's is read from
 * the traces: the symbols of every libpython and python executable they
 * carry, and offsets into those files where a symbol is missing.  Native
 * frames of other code (a C extension, libtorch) stay, and so does
 * everything above the first and below the last Python frame.  Python
 * frames are the names pyframes.c writes: "func (file.py:12)". */
#ifndef FLIGHTREC_PY_HIDE_H
#define FLIGHTREC_PY_HIDE_H

#include <stddef.h>

struct trace_set;
struct flame_tree;
struct py_hide;

/* After trace_set_run (ts NULL: no file, offsets into the interpreter's
 * files only); NULL when memory runs out. */
struct py_hide *py_hide_new(struct trace_set *ts);
void py_hide_free(struct py_hide *ph);

int py_is_python_frame(const char *name);
int py_is_interpreter_frame(const struct py_hide *ph, const char *name);
/* A Python frame's file (base name, as pyframes.c writes it) into file,
 * and its line (0: unknown); 0 when name is not a Python frame. */
int py_frame_source(const char *name, char *file, size_t len, int *line);

/* hide[i] = 1 for the frames of names[0..n) (root first) to leave out;
 * returns how many. */
size_t py_hide_mask(const struct py_hide *ph, const char *const *names, size_t n,
		    unsigned char *hide);
/* A copy of t with py_hide_mask applied to every stack; NULL when memory
 * runs out. */
struct flame_tree *py_hide_tree(const struct py_hide *ph, const struct flame_tree *t);

#endif
