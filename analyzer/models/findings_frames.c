/* The frame rules of the idle attribution: which functions name a data
 * loader and which a checkpoint (fx_frame_match, findings_private.h). */
#include "findings_private.h"

#include <ctype.h>
#include <string.h>

static int has_word(const char *name, size_t len, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; i + w <= len; i++) {
		size_t k = 0;
		while (k < w && tolower((unsigned char)name[i + k]) == word[k])
			k++;
		if (k == w)
			return 1;
	}
	return 0;
}

size_t fx_frame_match(const char *const *frames, size_t n, enum finding_kind kind)
{
	static const char *const loader[] = { "load", "decode", "collate", "__next__", NULL };
	static const char *const ckpt[] = { "save", "checkpoint", "serializ", NULL };
	const char *const *words = kind == FIND_DATALOADER ? loader
		: kind == FIND_SYNC_CHECKPOINT ? ckpt : NULL;
	if (!words)
		return SIZE_MAX;
	for (size_t i = n; i-- > 0;) {
		const char *f = frames[i];
		if (!f)
			continue;
		size_t len = strlen(f);
		if (len >= 4 && !strcmp(f + len - 4, "_[k]"))
			continue; /* kernel frames never name the job's code */
		if (!strncmp(f, "_dl_", 4))
			continue; /* nor the dynamic linker's: a sample in the lazy
				   * binder _dl_runtime_resolve_xsavec was a "save" */
		const char *paren = strstr(f, " (");
		if (paren)
			len = (size_t)(paren - f); /* a Python frame: its function name */
		for (size_t w = 0; words[w]; w++)
			if (has_word(f, len, words[w]))
				return i;
	}
	return SIZE_MAX;
}
