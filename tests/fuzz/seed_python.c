/* A stand-in CPython 3.13 interpreter file for fuzz_recorder_python's seeds
 * (built, never committed): the symbols recorder/track/python.c reads, Py_Version
 * and _PyRuntime opening with a _Py_DebugOffsets table. */
const unsigned int Py_Version = 0x030D00F0;

struct debug_offsets {
	char cookie[8];
	unsigned long long field[43]; /* 352 bytes in all */
};

/* the fields python_parse.c reads, at their 3.13 places ((at - 8) / 8) */
struct debug_offsets _PyRuntime = {
	.cookie = "xdebugpy",
	.field = {[4] = 40, [8] = 72, [20] = 8, [22] = 72, [24] = 160, [28] = 8, [29] = 0,
		  [30] = 56, [32] = 70, [42] = 200, [38] = 68},
};
