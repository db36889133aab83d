/* A flame graph as a tree of frames: what every flame output (folded, svg,
 * html, the report) is written from.  Memory grows with distinct stacks,
 * never with the number of samples merged into them. */
#ifndef FLIGHTREC_FLAME_TREE_H
#define FLIGHTREC_FLAME_TREE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct flame_node {
	const char *name;  /* owned by the tree (interned) */
	uint64_t total;    /* value of this node and everything above it */
	uint64_t self;     /* value of stacks that end here */
	uint32_t parent;   /* index; the root (index 0) is its own parent */
	uint32_t first_child; /* 0: none */
	uint32_t next_sibling; /* 0: none */
	uint32_t depth;    /* root = 0 */
};

struct flame_tree;

struct flame_tree *flame_tree_new(void);
void flame_tree_free(struct flame_tree *t);

/* Add value to the stack frames[0] (outermost, e.g. "main") .. frames[n-1]
 * (leaf).  Names are copied.  Returns 0 or -errno. */
int flame_tree_add(struct flame_tree *t, const char *const *frames, size_t n,
		   uint64_t value);

size_t flame_tree_count(const struct flame_tree *t); /* nodes incl. root */
/* The pointer is valid until the next flame_tree_add; NULL past the end. */
const struct flame_node *flame_tree_node(const struct flame_tree *t, uint32_t i);
uint64_t flame_tree_total(const struct flame_tree *t);

/* Children are kept in name order so output is deterministic. */

/* Folded output as shared/CLI.md says: one line per unique stack (nodes with
 * self > 0), root first, frames joined by ';', a space, the value. */
int flame_write_folded(const struct flame_tree *t, FILE *out);

struct flame_render_opts {
	const char *title;    /* e.g. "CPU samples: trainer (pid 1234)" */
	const char *unit;     /* "samples" or "bytes" */
	const char *subtitle; /* may be NULL */
	/* the JSON on one line (a page embedding many graphs, the report);
	 * else a line break every few entries, so a standalone svg/html file
	 * stays readable in an editor */
	int one_line;
};
/* Interactive flame graph (click to zoom, search, reset), self-contained,
 * no network.  svg: a standalone SVG document with an inline script.
 * html: an HTML page holding the same SVG renderer.  Every string from the
 * trace is escaped. */
int flame_write_svg(const struct flame_tree *t, const struct flame_render_opts *o,
		    FILE *out);
int flame_write_html(const struct flame_tree *t, const struct flame_render_opts *o,
		     FILE *out);

/* Output size bound for svg/html: frames whose total is below min_fraction
 * of the whole (0: 0.0001) are merged into their parent's self, and at most
 * max_nodes frames are written (0: 200000), keeping the largest.  The
 * subtitle says how many were left out.  The plain writers use the
 * defaults.  All writers return 0 or -errno (-EIO when a write failed). */
struct flame_render_limits {
	double min_fraction;
	size_t max_nodes;
};
int flame_write_svg_ex(const struct flame_tree *t, const struct flame_render_opts *o,
		       const struct flame_render_limits *lim, FILE *out);
int flame_write_html_ex(const struct flame_tree *t, const struct flame_render_opts *o,
			const struct flame_render_limits *lim, FILE *out);

/* Just the tree as the renderer's JSON object (title, subtitle, unit,
 * total, omitted, omittedBelow, names, and nodes as pre-order triples of
 * parent position, name index, total), pruned by lim as above: what the
 * svg and html writers embed, and what the report embeds once per graph.
 * Returns 0, -EINVAL (no tree or stream) or -ENOMEM; write errors stay
 * in the stream's error flag for the caller, who may write more before
 * checking. */
int flame_write_json(const struct flame_tree *t, const struct flame_render_opts *o,
		     const struct flame_render_limits *lim, FILE *out);

#endif
