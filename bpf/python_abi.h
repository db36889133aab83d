/* What the BPF side needs to walk a CPython thread's frames: filled per
 * process by the recorder (recorder/track/python.c) from the interpreter's
 * version (and, from 3.13 on, its _Py_DebugOffsets) into fr_py_procs.
 * Offsets are bytes; 0 means "not in this version". */
#ifndef FLIGHTREC_PYTHON_ABI_H
#define FLIGHTREC_PYTHON_ABI_H

#include "events.h"

enum py_entry_kind {
	PY_ENTRY_EVERY_FRAME = 0, /* 3.10: one Python frame per C eval call */
	PY_ENTRY_IS_ENTRY = 1,    /* 3.11: bool is_entry in the frame */
	PY_ENTRY_OWNER = 2,       /* 3.12+: char owner; 3 = C-stack shim */
};

enum py_instr_kind {
	PY_INSTR_POINTER = 0, /* 3.11+: pointer into co_code_adaptive */
	PY_INSTR_LASTI = 1,   /* 3.10: int f_lasti, in 2-byte code units */
};

enum py_thread_match {
	PY_MATCH_NATIVE_TID = 0, /* 3.11+: native_thread_id == tid */
	PY_MATCH_PTHREAD = 1,    /* 3.10: thread_id == pthread_self() == fs base */
};

struct py_offsets {
	fr_u32 version;          /* 310, 311 ... */
	fr_u32 interp_head;      /* _PyRuntime.interpreters.head */
	fr_u32 interp_next;      /* PyInterpreterState.next */
	fr_u32 threads_head;     /* PyInterpreterState.threads.head */
	fr_u32 ts_next;          /* PyThreadState.next */
	fr_u32 ts_thread_id;     /* native_thread_id (3.11+) or thread_id (3.10) */
	fr_u32 thread_match;     /* enum py_thread_match */
	fr_u32 ts_cframe;        /* 3.11/3.12: PyThreadState.cframe, else 0 */
	fr_u32 ts_frame;         /* cframe ? _PyCFrame.current_frame : tstate's frame */
	fr_u32 fr_code;
	fr_u32 fr_previous;
	fr_u32 fr_instr;
	fr_u32 instr_kind;       /* enum py_instr_kind */
	fr_u32 entry_kind;       /* enum py_entry_kind */
	fr_u32 fr_entry;         /* offset of is_entry / owner */
	fr_u32 code_adaptive;    /* offset of co_code_adaptive in a code object */
	fr_u32 code_firstlineno; /* offset of co_firstlineno */
	fr_u32 _pad;
};

struct py_proc {
	fr_u64 runtime_addr;     /* &_PyRuntime in the process */
	struct py_offsets off;
};

#define PY_OWNER_CSTACK 3

#endif
