/* FR_REC_SYSCALL_DROPS (see syscall_drops.h): the per-CPU counters of the
 * syscalls object summed per call number; numbers without losses are left
 * out, so the record is small whatever the map's size. */
#include "drain/syscall_drops.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>

#include "attach/bpf_probes.h"
#include "frec_records.h"
#include "frec_writer.h"

int syscall_drops_write(const struct bpf_probes *p, struct frec_writer *w, uint64_t now_ns)
{
	struct bpf_object *obj = p->objs[FR_PROBE_SYSCALLS];
	struct bpf_map *map = obj ? bpf_object__find_map_by_name(obj, "fr_sys_drops_by_nr") : NULL;
	if (!map)
		return 0;
	int fd = bpf_map__fd(map), ncpu = libbpf_num_possible_cpus();
	if (fd < 0 || ncpu <= 0)
		return -1;
	uint64_t *per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu));
	struct fr_syscall_drop *counts = calloc(FR_SYSCALL_DROP_NRS, sizeof(*counts));
	int rc = per_cpu && counts ? 0 : -1;
	uint32_t n = 0;
	for (uint32_t nr = 0; !rc && nr < FR_SYSCALL_DROP_NRS; nr++) {
		if (bpf_map_lookup_elem(fd, &nr, per_cpu)) {
			rc = -1;
			break;
		}
		uint64_t sum = 0;
		for (int c = 0; c < ncpu; c++)
			sum += per_cpu[c];
		if (sum)
			counts[n++] = (struct fr_syscall_drop){ .nr = nr, .count = sum };
	}
	struct frec_builder *b = rc ? NULL : frec_builder_new(w, FR_CHUNK_META);
	uint32_t size = (uint32_t)(sizeof(struct fr_rec_syscall_drops) + n * sizeof(*counts));
	uint8_t *rec = b ? frec_builder_reserve(b, size) : NULL;
	if (rec) {
		struct fr_rec_syscall_drops h = {
			.h = { .size = size, .type = FR_REC_SYSCALL_DROPS },
			.ts_ns = now_ns,
			.n = n,
		};
		memcpy(rec, &h, sizeof(h));
		if (n)
			memcpy(rec + sizeof(h), counts, n * sizeof(*counts));
		frec_builder_commit(b, now_ns);
	} else {
		rc = -1;
	}
	if (b)
		frec_builder_free(b);
	free(per_cpu);
	free(counts);
	return rc;
}
