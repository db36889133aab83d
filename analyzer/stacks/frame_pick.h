/* Frames an agent can act on: of a stack's frames, the ones that name
 * code a person could change (Python frames, the job's own binaries) and
 * the innermost named native frame (where the time is spent: sgemm_,
 * memcpy), with interpreter internals (_PyObject_MakeTpCall,
 * PyEval_EvalCode ...), library frames between them and runs of unnamed
 * offsets (python3.11+0x1e4901, libtorch_cpu.so+0x2112a45, [unknown])
 * collapsed into one counted marker "[+N]".  A stack with no Python or
 * own frame keeps its named library frames (a native job linked against
 * system libraries only).  A kernel part is shown as its innermost frame
 * after "...", start-up frames (_start, __libc_start_main ...) dropped.
 *
 * Own binaries are the ELF objects whose paths lie outside the system's
 * places (/usr, /lib*, /bin, /opt/conda, /snap, site-packages,
 * dist-packages, lib/python*): the job's build tree or home.  Their
 * symbols' shown names (demangled as the symbolizer shows them) are kept
 * per set as 64-bit hashes.  Not for naming frames (symbolize.c). */
#ifndef FLIGHTREC_FRAME_PICK_H
#define FLIGHTREC_FRAME_PICK_H

#include <stddef.h>

struct trace_set;
struct frame_owners;

enum frame_class {
	FC_PYTHON,   /* "forward (model.py:12)" */
	FC_OWN,      /* a symbol of the job's own binaries */
	FC_LIB,      /* another named native frame */
	FC_INTERP,   /* the interpreter's internals */
	FC_UNNAMED,  /* module+0xOFFSET, [unknown], [lost] */
	FC_KERNEL,   /* name_[k] */
	FC_STARTUP,  /* _start, __libc_start_main, clone ... */
};

/* Is path a system place (the rule above)? */
int frame_system_path(const char *path);

/* The set's own-binary names, built on first use and freed with the set;
 * NULL when memory runs out (every frame is then FC_LIB or another class
 * by its name alone). */
const struct frame_owners *frame_owners_of(struct trace_set *ts);

/* The class of a frame name; owners may be NULL. */
enum frame_class frame_classify(const struct frame_owners *owners, const char *name);

/* Worth keeping (Python, own, or the innermost named native)?  mark[i]
 * set for frames[0..n) root first; returns how many kept. */
size_t frame_pick(const struct frame_owners *owners, const char *const *frames, size_t n,
		  unsigned char *keep);

/* frames root first -> "...;main (train.py:18);[+5];Linear.forward
 * (linear.py:114);[+14];sgemm_": the innermost `max` picked frames, each
 * cut at 64 bytes, collapsed runs as "[+N]", "..." first when picked
 * frames were left out at the root end; into buf. */
const char *frame_pick_text(const struct frame_owners *owners, const char *const *frames,
			    size_t n, size_t max, char *buf, size_t len);

#endif
