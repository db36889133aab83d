/* A memory model's stack as text or JSON; see out_mem_stacks.h. */
#include "out_mem_stacks.h"
#include "model_mem.h"
#include "out_common.h"

#include <stdlib.h>

const char *mem_stack_line(struct trace_set *ts, uint32_t file, uint32_t stack_id,
			   size_t max_frames, char *buf, size_t len)
{
	size_t n, used = 0;
	const char **frames = mem_stack_frames(ts, file, stack_id, &n);
	if (!len)
		return buf;
	buf[0] = '\0';
	if (!frames) {
		snprintf(buf, len, "[out of memory]");
		return buf;
	}
	for (size_t k = 0; k < n && k < max_frames; k++) {
		int w = snprintf(buf + used, len - used, "%s%s", k ? " <- " : "", frames[n - 1 - k]);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	if (n > max_frames && used < len)
		snprintf(buf + used, len - used, " <- ...");
	free(frames);
	return buf;
}

void mem_stack_json(struct trace_set *ts, uint32_t file, uint32_t stack_id, FILE *out)
{
	size_t n;
	const char **frames = mem_stack_frames(ts, file, stack_id, &n);
	fputc('[', out);
	for (size_t k = 0; frames && k < n; k++) {
		if (k)
			fputc(',', out);
		out_json_str(out, frames[k]);
	}
	fputc(']', out);
	free(frames);
}
