/* Interned strings: each distinct string is stored once and keeps its address
 * until the pool is freed, so frame names can be compared and shared by
 * pointer.  Not for transient strings: nothing is ever released early. */
#ifndef FLIGHTREC_STRPOOL_H
#define FLIGHTREC_STRPOOL_H

#include <stddef.h>

struct strpool;

struct strpool *strpool_new(void);
void strpool_free(struct strpool *p);

/* The pooled copy of s[0..len) (a NUL is added); NULL when memory runs out. */
const char *strpool_intern(struct strpool *p, const char *s, size_t len);
const char *strpool_intern_cstr(struct strpool *p, const char *s);

#endif
