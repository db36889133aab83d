/* x86-64 system call names (see syscall_names.c for where they come from). */
#ifndef FLIGHTREC_SYSCALL_NAMES_H
#define FLIGHTREC_SYSCALL_NAMES_H

#include <stdint.h>

/* The name of x86-64 syscall nr, or NULL when the table does not know it. */
const char *syscall_name(uint32_t nr);

#endif
