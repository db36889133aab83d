/* How full the BPF ring buffer is, read where the kernel keeps it: its
 * consumer and producer positions, each on its own page of the map
 * (mapped read-only here, next to libbpf's own mapping).  The bytes
 * between them are what the drain has yet to read, records reserved but
 * not yet committed included: what the kernel compares against the ring's
 * size before it drops an event (ring_full).  Two loads per read. */
#ifndef FLIGHTREC_RING_FILL_H
#define FLIGHTREC_RING_FILL_H

#include <stdint.h>

struct ring_fill {
	const volatile uint64_t *consumer, *producer; /* NULL: not mapped */
	uint64_t size; /* the ring's data bytes */
};

/* 0, or -errno (the ring's fill is then never known: ring_fill_bytes 0). */
int ring_fill_open(struct ring_fill *f, int ring_fd);
/* Bytes not yet consumed. */
uint64_t ring_fill_bytes(const struct ring_fill *f);
void ring_fill_close(struct ring_fill *f);

#endif
