/* Attaching one probe family's user-space functions (cuda, nccl, rdma, the
 * step marker) to the files that hold them.  A family is its descriptor's
 * symbol table (struct fr_family_symbol: symbol, function id, cookie bits,
 * entry program) plus its loaded BPF entry/return programs; attaching to a
 * file finds the symbols in it (default symbol versions, .symtab too) and
 * attaches each function once per address (aliases such as NCCL's pnccl*
 * share an address: attached once, named by the first name in the table),
 * with a BPF cookie naming the function.  Probes are attached by file, for
 * every process (the BPF side filters by the traced pid set), once per file. */
#ifndef FLIGHTREC_UPROBE_FAMILY_H
#define FLIGHTREC_UPROBE_FAMILY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fr_family.h"

struct bpf_program;
struct bpf_link;

struct attach_result {
	int found;           /* functions of the table present in the file */
	int attached;        /* functions attached */
	int single_stepped;  /* attached, first instruction not emulated */
	char error[200];     /* first failure, "" when none */
	char slow[200];      /* names of single-stepped functions */
};

struct uprobe_family {
	const struct fr_family *family; /* name and probe id */
	/* what is attached: the descriptor's symbols, or the one --step-marker
	 * names; the cookie is func | flags << 16 | extra << 32, and entry
	 * indexes entry_progs */
	const struct fr_family_symbol *symbols;
	size_t n_symbols;
	struct bpf_program *entry_progs[FR_FAMILY_MAX_ENTRY_PROGS];
	struct bpf_program *exit_prog;

	pthread_mutex_t lock;
	struct attached_file { uint64_t dev, ino, offset; } *files; /* offset 0: whole file */
	size_t n_files, cap_files;
	struct bpf_link **links;
	size_t n_links, cap_links;
	bool multi;          /* attach with uprobe_multi links (see uprobe_multi_supported) */
	int *link_fds;       /* multi mode: one link per program per file */
	size_t n_link_fds, cap_link_fds;
	uint32_t functions_attached; /* over all files */
};

void uprobe_family_init(struct uprobe_family *f);

/* Whether this kernel has uprobe_multi links (6.6+).  With them a file's
 * probes attach in one system call per program, and detach with one RCU
 * grace period instead of one per probe (0.1 s each on this kind of VM).
 * The programs must then be loaded with uprobe_multi_prepare(). */
bool uprobe_multi_supported(void);
void uprobe_multi_prepare(struct bpf_program *prog);
/* Attach to the regular file open at fd (the caller's to close).  The
 * probes go to that very inode, never to what a name leads to: a process's
 * file is opened as it is mapped (dso_open_mapped), so the job cannot swap
 * another in between.  Files are told apart by device and inode.  0 when
 * the file was handled now or before (res->found == 0: nothing of this
 * family in it), -1 when it is not ELF. */
int uprobe_family_attach_file(struct uprobe_family *f, int fd,
			      struct attach_result *res, bool *already);
/* Attaches entry_progs[entry] (and exit_prog) at one file offset with the
 * given cookie, once per (file, offset).  For functions without a symbol,
 * found through a live process (the verbs provider's data path).  0 when
 * attached now, 1 when it already was, -1 on failure (res->error). */
int uprobe_family_attach_offset(struct uprobe_family *f, int fd, uint64_t offset,
				uint64_t cookie, int entry, struct attach_result *res);

/* Several offsets of one file at once (multi mode: one entry and one return
 * link, so the functions start being traced together).  Offsets attached
 * before are skipped; attached[i] says which were attached now.  0, or -1
 * with res->error. */
int uprobe_family_attach_offsets(struct uprobe_family *f, int fd,
				 const uint64_t *offsets, const uint64_t *cookies, int n,
				 bool *attached, struct attach_result *res);

/* Detaches everything (links destroyed). */
void uprobe_family_detach(struct uprobe_family *f);
void uprobe_family_destroy(struct uprobe_family *f);

#endif
