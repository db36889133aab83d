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
	char path[4096];
	bool all_mapped = true;

	static const char *names[3] = {"post_send", "post_recv", "poll_cq"};
	static const uint64_t cookies[3] = {RDMA_DP_POST_SEND, RDMA_DP_POST_RECV, RDMA_DP_POLL_CQ};
	char kpath[4352], text[4700];

	for (int i = 0; i < 3; i++) {
		struct mapping m;
		struct attach_result res;

		if (!addrs[i])
			continue;
		bool found = false;
		uint32_t via = pid;
		for (int k = 0; k < n_lineage && !found; k++) {
			/* a fork copies its parent's address space exactly */
			found = dso_table_find_mapping_locked(dsos, lineage[k], addrs[i], &m) &&
				dso_table_path(dsos, m.dso_id, path, sizeof(path));
			via = lineage[k];
		}
		if (!found) {
			all_mapped = false;
			if (!last_try)
				continue;
			snprintf(text, sizeof(text), "%s at 0x%llx in pid %u: no file mapping covers "
				 "the address (JIT code?); the data path is not traced", names[i],
				 (unsigned long long)addrs[i], pid);
			attach_record(b, pid, FR_ATTACH_FAILED, names[i], text);
			fprintf(stderr, "flightrec: rdma: %s\n", text);
			continue;
		}
		uint64_t offset = addrs[i] - m.start + m.pgoff;
		snprintf(kpath, sizeof(kpath), "/proc/%u/root%s", via, path);
		int rc = uprobe_family_attach_offset(dp, kpath, offset, cookies[i], 0, &res);
		if (rc == 1)
			continue;
		if (rc < 0) {
			snprintf(text, sizeof(text), "%s at %s+0x%llx: %s", names[i], path,
				 (unsigned long long)offset, res.error);
			attach_record(b, pid, FR_ATTACH_FAILED, names[i], text);
			fprintf(stderr, "flightrec: rdma: cannot attach %s\n", text);
			continue;
		}
		snprintf(text, sizeof(text), "%s at %s+0x%llx (from the ops table of pid %u)%s",
			 names[i], path, (unsigned long long)offset, pid,
			 res.single_stepped ? "; its first instruction is single-stepped "
					      "(about 15x the probe cost per call)" : "");
		attach_record(b, pid, res.single_stepped ? FR_ATTACH_SINGLE_STEPPED : FR_ATTACH_OK,
			      names[i], text);
		if (!quiet || res.single_stepped)
			fprintf(stderr, "flightrec: rdma: attached %s\n", text);
	}
	return all_mapped;
}
