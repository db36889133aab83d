/* Which stack top the kernel may cut a thread's dwarf copies at
 * (fr_ustack_tops, bpf/ustack.bpf.h), from what the recorder's unwinds of
 * its copies say.
 *
 * A wrong top costs every stack of the thread that is copied before the
 * recorder finds out (they are cut short and unwind to a frame or two).
 * The planner offers a top only where the unwind tables say the frame is
 * the outermost one (a zero return address read from the copy is not
 * enough: a CPU sample that lands in the kernel's handling of a
 * breakpoint read one 80 bytes above its stack pointer); even so a top is
 * trusted only when two unwinds agree on it.  A trusted top that
 * disagrees or falls short is forgotten until two unwinds agree again:
 * a short may be the unwind's fault, not the top's (a sample in code
 * whose tables mislead walks off to a wrong frame and past the cut, as
 * it would have in the whole copy); a thread whose tops fall short
 * STACK_TOPS_STRIKES times is never cut again.
 *
 * A direct-mapped table: bounded whatever the churn of threads; a thread
 * whose slot another took starts over (it may then be trusted again). */
#ifndef FLIGHTREC_STACK_TOPS_H
#define FLIGHTREC_STACK_TOPS_H

#include <stdint.h>

#define STACK_TOPS_SLOTS 1024
#define STACK_TOPS_STRIKES 3

struct stack_tops {
	struct stack_top_slot {
		uint64_t key;       /* pid << 32 | tid; 0: free */
		uint64_t top;       /* trusted and handed to the kernel; 0: none */
		uint64_t seen;      /* a first unwind's top, not yet agreed on */
		int strikes;        /* trusted tops that fell short or disagreed */
	} slot[STACK_TOPS_SLOTS];
};

enum stack_top_action {
	STACK_TOP_KEEP,   /* nothing to tell the kernel */
	STACK_TOP_SET,    /* cut the thread's copies at *top from now on */
	STACK_TOP_FORGET, /* copy the thread's stacks whole again */
};

/* An unwind of a copy of pid/tid's stack: top the address past the
 * last byte it read when it reached the outermost frame, 0 when it did
 * not; cut_short: the copy was cut at the thread's top and its unwind
 * needed bytes past the cut.  Says what to tell the kernel (*set: the top
 * for STACK_TOP_SET). */
enum stack_top_action stack_tops_note(struct stack_tops *t, uint32_t pid, uint32_t tid,
				      uint64_t top, int cut_short, uint64_t *set);

#endif
