/* The BPF ring buffer's fill (see ring_fill.h). */
#include "drain/ring_fill.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int ring_fill_open(struct ring_fill *f, int ring_fd)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);

	memset(f, 0, sizeof(*f));
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(ring_fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF)
		return -EINVAL;
	void *c = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, ring_fd, 0);
	if (c == MAP_FAILED)
		return -errno;
	void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, ring_fd, page);
	if (p == MAP_FAILED) {
		int err = -errno;
		munmap(c, (size_t)page);
		return err;
	}
	f->consumer = c;
	f->producer = p;
	f->size = info.max_entries;
	return 0;
}

uint64_t ring_fill_bytes(const struct ring_fill *f)
{
	if (!f->consumer)
		return 0;
	/* the consumer first: it only grows towards the producer, so the
	 * difference is never negative */
	uint64_t cons = __atomic_load_n(f->consumer, __ATOMIC_ACQUIRE);
	uint64_t prod = __atomic_load_n(f->producer, __ATOMIC_ACQUIRE);
	return prod > cons ? prod - cons : 0;
}

void ring_fill_close(struct ring_fill *f)
{
	long page = sysconf(_SC_PAGESIZE);
	if (f->consumer)
		munmap((void *)f->consumer, (size_t)page);
	if (f->producer)
		munmap((void *)f->producer, (size_t)page);
	memset(f, 0, sizeof(*f));
}
