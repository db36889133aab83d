/* The stragglers result's shared JSON pieces; see out_stragglers_json.h. */
#include "out_stragglers_json.h"
#include "model_stragglers.h"
#include "out_common.h"

#include <inttypes.h>

void strag_json_num(FILE *out, double v, const char *fmt)
{
	if (v < 0)
		fputs("null", out);
	else
		fprintf(out, fmt, v);
}

void strag_json_causes(FILE *out, const struct straggler_verdict *v)
{
	fputs("\"frames\":[", out);
	for (size_t i = 0; i < v->n_frames; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		out_json_str(out, v->frames[i].name ? v->frames[i].name : "?");
		fprintf(out, ",\"share\":%.4f,\"others_share\":%.4f}", v->frames[i].share,
			v->frames[i].others_share);
	}
	fputs("],\"syscalls\":[", out);
	for (size_t i = 0; i < v->n_syscalls; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		out_json_str(out, v->syscalls[i].name ? v->syscalls[i].name : "?");
		fprintf(out, ",\"calls\":%" PRIu64 ",\"ms_per_step\":%.3f,\"others_ms_per_step\":%.3f}",
			v->syscalls[i].calls, v->syscalls[i].ms_per_step, v->syscalls[i].others_ms_per_step);
	}
	fputc(']', out);
}
