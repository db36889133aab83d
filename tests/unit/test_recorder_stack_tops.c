/* Which stack top the recorder lets the kernel cut a thread's dwarf copies
 * at (recorder/drain/stack_tops.h): one unwind's word is not enough, two
 * that agree are; a trusted top that falls short or disagrees is forgotten
 * until two agree again, and after STACK_TOPS_STRIKES such strikes for
 * good (a wrong top costs every stack of the thread copied before the
 * recorder finds out; one short may be a bad unwind); copies cut before
 * the kernel forgot strike nothing and cost no second forget; threads do
 * not share what they learned; the table stays bounded whatever the
 * number of threads. */
#include "check.h"

#include "drain/stack_tops.h"

static struct stack_tops t;

static enum stack_top_action note(uint32_t tid, uint64_t top, int cut_short, uint64_t *set)
{
	return stack_tops_note(&t, 100, tid, top, cut_short, set);
}

int main(void)
{
	uint64_t set = 1;
	const uint64_t top = 0x7ffd0000f000ull;

	/* nothing learned from copies that reached no outermost frame */
	CHECK(note(1, 0, 0, &set) == STACK_TOP_KEEP);
	CHECK_EQ_U64(set, 0);
	/* the first claim waits; one that disagrees replaces it and waits */
	CHECK(note(1, 0x7ffd0000e450, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
	/* agreed: trusted */
	CHECK(note(1, top, 0, &set) == STACK_TOP_SET);
	CHECK_EQ_U64(set, top);
	/* said again (a copy cut there that unwound to the end): nothing to do */
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
	/* a copy cut there whose unwind needed bytes past the cut: forgotten;
	 * copies the kernel cut before it forgot, short too, strike nothing
	 * and tell the kernel nothing again */
	CHECK(note(1, 0, 1, &set) == STACK_TOP_FORGET);
	CHECK(note(1, 0, 1, &set) == STACK_TOP_KEEP);
	CHECK(note(1, 0, 1, &set) == STACK_TOP_KEEP);
	CHECK(note(1, 0, 1, &set) == STACK_TOP_KEEP);
	/* the next word alone is not enough; two that agree are trusted again */
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(1, top, 0, &set) == STACK_TOP_SET);
	CHECK_EQ_U64(set, top);
	/* the strikes add up across trusts: the last one is for good */
	for (int strike = 2; strike <= STACK_TOPS_STRIKES; strike++) {
		CHECK(note(1, 0, 1, &set) == STACK_TOP_FORGET);
		if (strike < STACK_TOPS_STRIKES) {
			CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
			CHECK(note(1, top, 0, &set) == STACK_TOP_SET);
		}
	}
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(1, 0, 1, &set) == STACK_TOP_KEEP);
	CHECK(note(1, top, 0, &set) == STACK_TOP_KEEP);

	/* another thread of the process starts from nothing; a trusted top
	 * that a later unwind contradicts is forgotten too, until two agree */
	CHECK(note(2, 0x7f0000002000, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(2, 0x7f0000002000, 0, &set) == STACK_TOP_SET);
	CHECK_EQ_U64(set, 0x7f0000002000);
	CHECK(note(2, 0x7f0000002400, 0, &set) == STACK_TOP_FORGET);
	CHECK(note(2, 0x7f0000002400, 0, &set) == STACK_TOP_KEEP);
	CHECK(note(2, 0x7f0000002400, 0, &set) == STACK_TOP_SET);
	CHECK_EQ_U64(set, 0x7f0000002400);

	/* a short bounded copy of a thread this table does not hold (its slot
	 * was taken by another, the kernel's map still has the top): forgotten */
	CHECK(note(3, 0, 1, &set) == STACK_TOP_FORGET);

	/* thousands of threads: a bounded table; each thread that agrees with
	 * itself is trusted (those whose slot was retaken start over) */
	unsigned trusted = 0;
	for (uint32_t tid = 10; tid < 10 + 4 * STACK_TOPS_SLOTS; tid++) {
		uint64_t at = 0x7a0000000000ull + (uint64_t)tid * 0x100000;
		note(tid, at, 0, &set);
		trusted += note(tid, at, 0, &set) == STACK_TOP_SET;
	}
	CHECK_EQ_U64(trusted, 4 * STACK_TOPS_SLOTS);
	return check_finish();
}
