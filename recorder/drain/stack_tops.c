/* Stack tops trusted by agreement (see stack_tops.h). */
#include "drain/stack_tops.h"

#include <string.h>

enum stack_top_action stack_tops_note(struct stack_tops *t, uint32_t pid, uint32_t tid,
				      uint64_t top, int cut_short, uint64_t *set)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	struct stack_top_slot *s = &t->slot[(key * 0x9e3779b97f4a7c15ull) >> 54];
	*set = 0;
	int fresh = s->key != key;
	if (fresh) {
		if (!top && !cut_short)
			return STACK_TOP_KEEP;
		/* the slot's thread is evicted: its top, if any, stays in the
		 * kernel's LRU map until the thread's copies prove it wrong */
		memset(s, 0, sizeof(*s));
		s->key = key;
	}
	if (s->strikes >= STACK_TOPS_STRIKES)
		return STACK_TOP_KEEP;
	/* cut at the top and short of the outermost frame, or a trusted top
	 * another unwind contradicts */
	if ((!top && cut_short) || (top && s->top && s->top != top)) {
		if (!s->top && !fresh)
			return STACK_TOP_KEEP; /* cut before the kernel was told to forget */
		/* a thread whose slot was retaken: the kernel's map may still
		 * hold its top, to forget, but no strike is known against it */
		s->strikes += s->top != 0;
		s->top = s->seen = 0;
		return STACK_TOP_FORGET;
	}
	if (!top || s->top)
		return STACK_TOP_KEEP;
	if (s->seen == top) {
		s->top = top;
		*set = top;
		return STACK_TOP_SET;
	}
	/* a first word, or one that disagrees with the first: the newer waits
	 * for its second */
	s->seen = top;
	return STACK_TOP_KEEP;
}
