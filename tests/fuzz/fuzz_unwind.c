/* libFuzzer target for offline unwinding (unwind/unwind*.c): the
 * reduced ELF images a trace carries (FR_REC_UNWIND: program headers,
 * .eh_frame_hdr, .eh_frame, .debug_frame) and one dwarf-mode stack
 * (FR_REC_USTACK: registers and the copied top of the stack), without the
 * trace around them (fuzz_records reaches the same code through records,
 * far more slowly).  Input: fuzz_unwind.h.  Each image goes through
 * uw_read_layout and uw_store_add_image; the modules make one uw_process
 * (libdwfl), and the stack is unwound with the cached-rule fast path, with
 * libdw alone (twice), and with room for two frames.  Checks: frame counts
 * within the room given, and where the fast path took the stack and libdw
 * walks it the same way twice, both agree (the fast path is a cache of
 * libdw's rules, so a difference is a bug in one of them); a stack that
 * unwinds to its outermost frame unwinds the same from its sparse copy
 * (uw_unwind_traced: only the bytes and registers the walk used). */
#include "fuzz_unwind.h"
#include "unwind.h"
#include "unwind_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_unwind: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_unwind_hdr h;
	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	size_t at = sizeof(h);
	size_t n_images = h.n_images % (FUZZ_UNWIND_MAX_IMAGES + 1);
	size_t n_mods = h.n_mods % (FUZZ_UNWIND_MAX_MODS + 1);
	uint32_t image_len[FUZZ_UNWIND_MAX_IMAGES] = { 0 };
	struct fuzz_unwind_mod fm[FUZZ_UNWIND_MAX_MODS];
	if (size - at < n_images * 4 + n_mods * sizeof(fm[0]))
		return 0;
	memcpy(image_len, data + at, n_images * 4);
	at += n_images * 4;
	memcpy(fm, data + at, n_mods * sizeof(fm[0]));
	at += n_mods * sizeof(fm[0]);

	/* each image and the stack in a buffer of their own size, so ASan sees
	 * any read past them */
	uint8_t *images[FUZZ_UNWIND_MAX_IMAGES] = { 0 };
	struct uw_store *store = uw_store_new();
	char why[256];
	uint64_t sum = 0;
	for (size_t i = 0; i < n_images; i++) {
		size_t len = image_len[i] <= size - at ? image_len[i] : size - at;
		image_len[i] = (uint32_t)len;
		images[i] = malloc(len ? len : 1);
		if (!images[i])
			goto out;
		memcpy(images[i], data + at, len);
		at += len;
		struct uw_layout lay;
		if (uw_read_layout(images[i], len, &lay, why, sizeof(why)) == 0) {
			check(lay.n_loads >= 1 && lay.n_loads <= 16, "PT_LOAD count");
			for (size_t k = 0; k < n_mods; k++) {
				uint64_t base;
				if (uw_load_base(&lay, fm[k].start, fm[k].pgoff, &base) == 0)
					sum += base;
			}
		}
		if (store) {
			uint8_t build_id[20] = { (uint8_t)i };
			uw_store_add_image(store, (uint32_t)i, build_id, 20, images[i], len, why,
					   sizeof(why));
			const struct uw_image *im = uw_store_image(store, (uint32_t)i);
			if (im)
				sum += im->len;
		}
	}
	size_t stack_len = h.stack_len <= size - at ? h.stack_len : size - at;
	uint8_t *stack = malloc(stack_len ? stack_len : 1);
	if (!stack)
		goto out;
	memcpy(stack, data + at, stack_len);
	if (store) {
		uint8_t py[32] = { 0 };
		int64_t r1 = uw_store_add_stack(store, 1, 2, 0, 311, 1, h.regs, py, 1, stack,
						(uint32_t)stack_len);
		int64_t r2 = uw_store_add_stack(store, 1, 3, 0, 311, 2, h.regs, py, 1, stack,
						(uint32_t)stack_len);
		check(r1 < 0 || r2 < 0 || r1 == r2, "identical stacks not shared");
		sum += uw_store_count(store) + uw_store_stack_bytes(store);
	}

	struct uw_module mods[FUZZ_UNWIND_MAX_MODS];
	size_t n = 0;
	for (size_t k = 0; k < n_mods; k++) {
		size_t img = fm[k].image % (n_images ? n_images : 1);
		if (!n_images)
			break;
		mods[n++] = (struct uw_module){ fm[k].start, fm[k].end, fm[k].pgoff, images[img],
						image_len[img], "fuzz" };
	}
	size_t skipped = 0;
	struct uw_process *p = uw_process_new(1, mods, n, &skipped, why, sizeof(why));
	if (p) {
		check(skipped <= n, "more modules skipped than given");
		struct uw_frame fast[UW_MAX_FRAMES], slow[UW_MAX_FRAMES], again[UW_MAX_FRAMES];
		enum uw_end fast_end, slow_end, again_end;
		uint64_t fast_before, fast_after;
		uw_process_fast_path(p, 1, &fast_before, NULL);
		size_t n_fast = uw_unwind(p, 2, h.regs, stack, stack_len, fast, UW_MAX_FRAMES,
					  &fast_end);
		uw_process_fast_path(p, 0, &fast_after, NULL);
		size_t n_slow = uw_unwind(p, 2, h.regs, stack, stack_len, slow, UW_MAX_FRAMES,
					  &slow_end);
		size_t n_again = uw_unwind(p, 2, h.regs, stack, stack_len, again, UW_MAX_FRAMES,
					   &again_end);
		check(n_fast <= UW_MAX_FRAMES && n_slow <= UW_MAX_FRAMES, "too many frames");
		/* libdw caches what it found in the CFI, so on a damaged image one
		 * walk may differ from the next: only a stack libdw unwinds the
		 * same way twice, and that the fast path took, is compared */
		int stable = n_slow == n_again && slow_end == again_end &&
			     !memcmp(slow, again, n_slow * sizeof(slow[0]));
		/* the ends may differ one way: the fast path stops where the CFI
		 * says the return address is undefined (outermost), while a libdw
		 * walk that failed to read any saved register outside the copy
		 * says stopped (uw_unwind cannot tell which read failed) */
		int same = n_fast == n_slow &&
			   (fast_end == slow_end ||
			    (fast_end == UW_END_OUTERMOST && slow_end == UW_END_STOPPED));
		for (size_t i = 0; same && i < n_fast; i++)
			same = fast[i].pc == slow[i].pc && fast[i].activation == slow[i].activation;
		if (!same && stable && fast_after > fast_before) {
			fprintf(stderr, "fast path: %zu frames (end %d), libdw: %zu (end %d)\n",
				n_fast, (int)fast_end, n_slow, (int)slow_end);
			for (size_t i = 0; i < n_fast || i < n_slow; i++)
				fprintf(stderr, "  #%zu %#llx %#llx\n", i,
					i < n_fast ? (unsigned long long)fast[i].pc : 0ull,
					i < n_slow ? (unsigned long long)slow[i].pc : 0ull);
			check(0, "the fast path and libdw disagree");
		}
		/* a sparse copy (FR_USTACK_SPARSE: what the traced unwind used,
		 * the rest zero, cut after the last byte used) unwinds the same */
		uw_process_fast_path(p, 1, NULL, NULL);
		uint8_t *map = malloc(stack_len ? stack_len : 1);
		uint8_t *sparse = calloc(1, stack_len ? stack_len : 1);
		if (map && sparse) {
			struct uw_use use = { .read_map = map };
			n_fast = uw_unwind_traced(p, 2, h.regs, stack, stack_len, &use, fast,
						  UW_MAX_FRAMES, &fast_end);
			uint32_t used = use.regs_used;
			size_t len = stack_len;
			while (len && !map[len - 1])
				len--;
			for (size_t i = 0; i < len; i++)
				sparse[i] = map[i] ? stack[i] : 0;
			uint64_t regs[UW_NREGS];
			for (int i = 0; i < UW_NREGS; i++)
				regs[i] = used & 1u << i ? h.regs[i] : 0;
			check((used & (1u << 7 | 1u << 16)) == (1u << 7 | 1u << 16),
			      "rsp and rip not counted as used");
			if (use.complete) {
				size_t n_sparse = uw_unwind(p, 2, regs, sparse, len, again,
							    UW_MAX_FRAMES, &again_end);
				int equal = n_sparse == n_fast && again_end == fast_end;
				for (size_t i = 0; equal && i < n_fast; i++)
					equal = again[i].pc == fast[i].pc &&
						again[i].activation == fast[i].activation;
				check(equal, "a sparse copy unwinds differently");
			}
		}
		free(map);
		free(sparse);
		size_t n2 = uw_unwind(p, 2, h.regs, stack, stack_len, fast, 2, &fast_end);
		check(n2 <= 2, "more frames than room");
		sum += n_fast + n_slow + n2;
		uw_process_free(p);
	}
	free(stack);
out:
	for (size_t i = 0; i < n_images; i++)
		free(images[i]);
	uw_store_free(store);
	sink = sum;
	return 0;
}
