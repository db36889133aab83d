/* Verbs data-path attach (see rdma_datapath.h). */
#include "attach/rdma_datapath.h"
#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "inspect/proc_maps.h"
#include "verbs_abi.h"

static void attach_record(struct frec_builder *b, uint32_t pid, uint16_t status,
			  const char *symbol, uint64_t gap_ns, const char *text)
{
	size_t text_len = strnlen(text, 1024);
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_attach) + text_len);
	struct fr_rec_attach *r = frec_builder_reserve(b, size);

	if (!r)
		return;
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_ATTACH;
	r->ts_ns = mono_ns();
	r->pid = pid;
	r->probe = FR_PROBE_RDMA;
	r->status = status;
	snprintf(r->symbol, sizeof(r->symbol), "%s", symbol);
	r->gap_ns = gap_ns;
	r->text_len = (uint32_t)text_len;
	memcpy(r + 1, text, text_len);
	frec_builder_commit(b, r->ts_ns);
}

/* The file and offset of addr from the process's own maps, for when its
 * mapping record has not reached the dso table yet (the tracking thread
 * reads them every 10 ms; a held process waits for this).  *mf gets the
 * mapping (range and identity) for dso_open_mapped. */
static bool map_from_proc(uint32_t pid, uint64_t addr, char *path, size_t path_len,
			  struct mapped_file *mf, uint64_t *offset)
{
	char name[64], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool found = false;

	snprintf(name, sizeof(name), "/proc/%u/maps", pid);
	FILE *f = fopen(name, "re");
	if (!f)
		return false;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		struct proc_maps_entry e;
		if (proc_maps_parse_line(line, (size_t)n, &e) || addr < e.start || addr >= e.end ||
		    !e.path_len || e.path[0] != '/' || e.path_len >= path_len)
			continue;
		memcpy(path, e.path, e.path_len);
		path[e.path_len] = '\0';
		*mf = (struct mapped_file){.pid = pid, .path = path, .start = e.start, .end = e.end,
					   .has_inode = true, .dev = makedev(e.dev_major, e.dev_minor),
					   .ino = e.ino};
		*offset = addr - e.start + e.offset;
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}

bool rdma_datapath_attach(struct uprobe_family *dp, struct dso_table *dsos,
			  struct frec_builder *b, uint32_t pid, const uint64_t addrs[3],
			  bool quiet, bool last_try)
{
	return rdma_datapath_attach_lineage(dp, dsos, b, &pid, 1, addrs, quiet, last_try);
}

bool rdma_datapath_attach_lineage(struct uprobe_family *dp, struct dso_table *dsos,
				  struct frec_builder *b, const uint32_t *lineage, int n_lineage,
				  const uint64_t addrs[3], bool quiet, bool last_try)
{
	return rdma_datapath_attach_ops(dp, dsos, b, lineage, n_lineage, addrs, 0, false, quiet,
					last_try) != RDMA_DP_UNMAPPED;
}

enum rdma_dp_status rdma_datapath_attach_ops(struct uprobe_family *dp, struct dso_table *dsos,
					     struct frec_builder *b, const uint32_t *lineage,
					     int n_lineage, const uint64_t addrs[3],
					     uint64_t opened_ns, bool held, bool quiet,
					     bool last_try)
{
	uint32_t pid = lineage[0];
	bool all_mapped = true, failed = false;

	static const char *names[3] = {"post_send", "post_recv", "poll_cq"};
	static const uint64_t cookies[3] = {RDMA_DP_POST_SEND, RDMA_DP_POST_RECV, RDMA_DP_POLL_CQ};
	struct mapped_file mfs[3];
	char text[4800], when[160] = "";

	/* resolve the three first: they attach together or not at all yet, so
	 * no completion is seen without the post that caused it */
	char paths[3][4096];
	uint64_t offsets[3];
	bool have[3] = {false, false, false};
	for (int i = 0; i < 3; i++) {
		struct mapping m;
		if (!addrs[i])
			continue;
		for (int k = 0; k < n_lineage && !have[i]; k++) {
			/* a fork copies its parent's address space exactly */
			have[i] = dso_table_find_mapping_locked(dsos, lineage[k], addrs[i], &m) &&
				  dso_table_path(dsos, m.dso_id, paths[i], sizeof(paths[i]));
			if (have[i]) {
				offsets[i] = addrs[i] - m.start + m.pgoff;
				/* the provider's file as mapped (map_files): the
				 * process may have swapped its name since */
				mfs[i] = (struct mapped_file){.pid = lineage[k], .path = paths[i],
							      .start = m.start, .end = m.end};
			}
		}
		if (!have[i] && held)
			have[i] = map_from_proc(pid, addrs[i], paths[i], sizeof(paths[i]), &mfs[i],
						&offsets[i]);
		if (have[i])
			continue;
		all_mapped = false;
		if (!last_try)
			continue;
		snprintf(text, sizeof(text), "%s at 0x%llx in pid %u: no file mapping covers "
			 "the address (JIT code?); the data path is not traced", names[i],
			 (unsigned long long)addrs[i], pid);
		attach_record(b, pid, FR_ATTACH_FAILED, names[i], 0, text);
		fprintf(stderr, "flightrec: rdma: %s\n", text);
	}
	if (!all_mapped && !last_try)
		return RDMA_DP_UNMAPPED;
	for (int i = 0; i < 3; i++) {
		if (!have[i])
			continue;
		/* the functions of one file, together (a provider holds all three) */
		uint64_t offs[3], cks[3];
		int idx[3], n = 0;
		for (int j = i; j < 3; j++) {
			if (have[j] && !strcmp(paths[j], paths[i])) {
				offs[n] = offsets[j];
				cks[n] = cookies[j];
				idx[n++] = j;
				have[j] = j == i ? have[j] : false;
			}
		}
		have[i] = false;
		struct attach_result res;
		bool done[3];
		struct stat st;
		int fd = dso_open_mapped(&mfs[i], &st), rc;
		if (fd < 0) {
			memset(&res, 0, sizeof(res));
			snprintf(res.error, sizeof(res.error), "cannot open the mapped file: %s",
				 strerror(errno));
			rc = -1;
		} else {
			rc = uprobe_family_attach_offsets(dp, fd, offs, cks, n, done, &res);
			close(fd);
		}
		/* how long the program could have posted unseen, or was held */
		uint64_t gap = opened_ns ? mono_ns() - opened_ns : 0;
		if (opened_ns)
			snprintf(when, sizeof(when), ", %.1f ms after the program got the context%s",
				 gap / 1e6, held ? " (held meanwhile)" : "");
		for (int k = 0; k < n; k++) {
			int j = idx[k];
			if (rc < 0) {
				failed = true;
				snprintf(text, sizeof(text), "%s at %.4095s+0x%llx: %s", names[j], paths[i],
					 (unsigned long long)offsets[j], res.error);
				attach_record(b, pid, FR_ATTACH_FAILED, names[j], gap, text);
				fprintf(stderr, "flightrec: rdma: cannot attach %s\n", text);
				continue;
			}
			if (!done[k])
				continue; /* attached before */
			snprintf(text, sizeof(text), "%s at %.4095s+0x%llx (from the ops table of pid %u%s)%s",
				 names[j], paths[i], (unsigned long long)offsets[j], pid, when,
				 res.single_stepped ? "; single-stepped by the kernel "
						      "(about 15x the probe cost per call)" : "");
			attach_record(b, pid, res.single_stepped ? FR_ATTACH_SINGLE_STEPPED : FR_ATTACH_OK,
				      names[j], gap, text);
			if (!quiet || res.single_stepped)
				fprintf(stderr, "flightrec: rdma: attached %s\n", text);
		}
	}
	if (!all_mapped || failed)
		return RDMA_DP_FAILED;
	return RDMA_DP_ATTACHED;
}
