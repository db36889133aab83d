/* Three --step-marker targets whose first instruction differs, called in
 * turn from run_steps: the stack at a probed function's entry must name
 * its caller exactly once however the function begins.
 *   step_ret    ret: no frame set-up at all
 *   step_push   push %rbp: kernels since 6.11 add the caller themselves
 *   step_endbr  endbr64, then push %rbp: likewise (CET builds)
 * Written in assembly so the compiler cannot change their first
 * instruction; the compiler still gives each the default call frame
 * information, which is right at their entry.
 *
 * usage: step_marks [STEPS]   (default 5) */
#include <stdio.h>
#include <stdlib.h>

__attribute__((naked, noinline)) void step_ret(__attribute__((unused)) int step)
{
	__asm__ volatile("ret");
}

__attribute__((naked, noinline)) void step_push(__attribute__((unused)) int step)
{
	__asm__ volatile("push %rbp\n\tmov %rsp, %rbp\n\tpop %rbp\n\tret");
}

__attribute__((naked, noinline)) void step_endbr(__attribute__((unused)) int step)
{
	__asm__ volatile("endbr64\n\tpush %rbp\n\tmov %rsp, %rbp\n\tpop %rbp\n\tret");
}

static volatile int sink;

/* Work after the calls, so none is a tail call. */
__attribute__((noinline)) void run_steps(int steps)
{
	for (int i = 0; i < steps; i++) {
		step_ret(i);
		step_push(i);
		step_endbr(i);
		sink += i;
	}
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 5;
	run_steps(steps);
	printf("step_marks: %d steps\n", steps);
	return 0;
}
