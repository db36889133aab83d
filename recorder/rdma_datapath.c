/* Verbs data-path attach (see rdma_datapath.h). */
#include "rdma_datapath.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "verbs_abi.h"

static void attach_record(struct frec_builder *b, uint32_t pid, uint16_t status,
			  const char *symbol, const char *text)
{
	struct timespec ts;
	size_t text_len = strnlen(text, 1024);
	uint32_t size = FR_ALIGN8(sizeof(struct fr_rec_attach) + text_len);
	struct fr_rec_attach *r = frec_builder_reserve(b, size);

	if (!r)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(r, 0, size);
	r->h.size = size;
	r->h.type = FR_REC_ATTACH;
	r->ts_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r->pid = pid;
	r->probe = FR_PROBE_RDMA;
	r->status = status;
	snprintf(r->symbol, sizeof(r->symbol), "%s", symbol);
	r->text_len = (uint32_t)text_len;
	memcpy(r + 1, text, text_len);
	frec_builder_commit(b, r->ts_ns);
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
	uint32_t pid = lineage[0];
	bool all_mapped = true;

	static const char *names[3] = {"post_send", "post_recv", "poll_cq"};
	static const uint64_t cookies[3] = {RDMA_DP_POST_SEND, RDMA_DP_POST_RECV, RDMA_DP_POLL_CQ};
	char kpath[4352], text[4700];

	/* resolve the three first: they attach together or not at all yet, so
	 * no completion is seen without the post that caused it */
	char paths[3][4096];
	uint64_t offsets[3];
	uint32_t via[3];
	bool have[3] = {false, false, false};
	for (int i = 0; i < 3; i++) {
		struct mapping m;
		if (!addrs[i])
			continue;
		for (int k = 0; k < n_lineage && !have[i]; k++) {
			/* a fork copies its parent's address space exactly */
			have[i] = dso_table_find_mapping_locked(dsos, lineage[k], addrs[i], &m) &&
				  dso_table_path(dsos, m.dso_id, paths[i], sizeof(paths[i]));
			via[i] = lineage[k];
		}
		if (have[i]) {
			offsets[i] = addrs[i] - m.start + m.pgoff;
			continue;
		}
		all_mapped = false;
		if (!last_try)
			continue;
		snprintf(text, sizeof(text), "%s at 0x%llx in pid %u: no file mapping covers "
			 "the address (JIT code?); the data path is not traced", names[i],
			 (unsigned long long)addrs[i], pid);
		attach_record(b, pid, FR_ATTACH_FAILED, names[i], text);
		fprintf(stderr, "flightrec: rdma: %s\n", text);
	}
	if (!all_mapped && !last_try)
		return false;
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
		snprintf(kpath, sizeof(kpath), "/proc/%u/root%s", via[i], paths[i]);
		int rc = uprobe_family_attach_offsets(dp, kpath, offs, cks, n, done, &res);
		for (int k = 0; k < n; k++) {
			int j = idx[k];
			if (rc < 0) {
				snprintf(text, sizeof(text), "%s at %s+0x%llx: %s", names[j], paths[i],
					 (unsigned long long)offsets[j], res.error);
				attach_record(b, pid, FR_ATTACH_FAILED, names[j], text);
				fprintf(stderr, "flightrec: rdma: cannot attach %s\n", text);
				continue;
			}
			if (!done[k])
				continue; /* attached before */
			snprintf(text, sizeof(text), "%s at %s+0x%llx (from the ops table of pid %u)%s",
				 names[j], paths[i], (unsigned long long)offsets[j], pid,
				 res.single_stepped ? "; single-stepped by the kernel "
						      "(about 15x the probe cost per call)" : "");
			attach_record(b, pid, res.single_stepped ? FR_ATTACH_SINGLE_STEPPED : FR_ATTACH_OK,
				      names[j], text);
			if (!quiet || res.single_stepped)
				fprintf(stderr, "flightrec: rdma: attached %s\n", text);
		}
	}
	return all_mapped;
}
