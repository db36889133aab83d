/* The frame rules of the idle attribution (analyzer/models/findings_frames.c):
 * which frame of a stack, root first, names a data loader or a checkpoint.
 * The dynamic linker's lazy binder (_dl_runtime_resolve_xsavec, where any
 * first call through the PLT is sampled) once counted as a checkpoint save. */
#include "check.h"
#include "findings_private.h"

#include <stdint.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

int main(void)
{
	const char *save[] = {"_start", "main", "train", "save_checkpoint", "write"};
	CHECK(fx_frame_match(save, N(save), FIND_SYNC_CHECKPOINT) == 3);
	const char *py[] = {"main", "torch.save (serialization.py:440)", "write"};
	CHECK(fx_frame_match(py, N(py), FIND_SYNC_CHECKPOINT) == 1);
	const char *resolver[] = {"_start", "main", "train_step", "_dl_runtime_resolve_xsavec"};
	CHECK(fx_frame_match(resolver, N(resolver), FIND_SYNC_CHECKPOINT) == SIZE_MAX);
	const char *kernel[] = {"main", "step", "save_regs_[k]"};
	CHECK(fx_frame_match(kernel, N(kernel), FIND_SYNC_CHECKPOINT) == SIZE_MAX);
	const char *loader[] = {"main", "DataLoader.__next__ (dataloader.py:630)", "_dl_fixup"};
	CHECK(fx_frame_match(loader, N(loader), FIND_DATALOADER) == 1);
	return check_finish();
}
