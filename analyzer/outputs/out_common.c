/* Shared helpers of the output writers (see out_common.h).  Not for
 * analyses: models own those. */
#include "out_common.h"
#include "align.h"
#include "model_rdma.h"
#include "trace_set.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

int64_t out_clock_offset_ns(struct trace_set *ts, size_t file_index)
{
	/* align.h: the median realtime anchor of the file (header and CLOCK
	 * records read so far), plus the cross-node correction once a model
	 * that knows simultaneous events (model_nccl) has run. */
	return trace_set_time_offset_ns(ts, file_index);
}

int out_process_rank(const struct trace_file *f, uint32_t pid, int64_t *rank)
{
	/* RANK from the launcher environment (FR_REC_PROC_ENV), decoded by
	 * trace_set; -1 there when unknown. */
	const struct ts_process *p = trace_file_process(f, pid);
	if (!p || p->rank < 0)
		return 0;
	*rank = p->rank;
	return 1;
}

const char *out_copy_kind_name(uint32_t kind)
{
	static const char *const names[] = { "H2H", "H2D", "D2H", "D2D", "default" };
	return kind < 5 ? names[kind] : NULL;
}

const char *out_wc_status_name(uint32_t status)
{
	/* the RDMA model's names without their IBV_WC_ prefix */
	const char *name = rdma_wc_status_name(status);
	return name ? name + strlen("IBV_WC_") : NULL;
}

/* One UTF-8 code point, or -1 for an invalid sequence (one byte used). */
static int32_t utf8_next(const unsigned char *s, size_t *used)
{
	unsigned char c = s[0];
	*used = 1;
	if (c < 0x80)
		return c;
	int len;
	int32_t cp, min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2; cp = c & 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3; cp = c & 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return -1;
	}
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*used = (size_t)len;
	return cp;
}

void out_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	fputc('"', f);
	while (*s) {
		size_t used;
		int32_t cp = utf8_next(s, &used);
		s += used;
		if (cp < 0)
			cp = 0xfffd;
		if (cp >= 0x20 && cp < 0x7f && cp != '"' && cp != '\\' && cp != '<' &&
		    cp != '>' && cp != '&' && cp != '\'') {
			fputc(cp, f);
		} else if (cp == '"' || cp == '\\') {
			fputc('\\', f);
			fputc(cp, f);
		} else if (cp < 0x10000) {
			fprintf(f, "\\u%04x", (unsigned)cp);
		} else {
			cp -= 0x10000;
			fprintf(f, "\\u%04x\\u%04x", 0xd800u + ((unsigned)cp >> 10),
				0xdc00u + ((unsigned)cp & 0x3ff));
		}
	}
	fputc('"', f);
}

void out_html_text(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	while (*s) {
		size_t used;
		int32_t cp = utf8_next(s, &used);
		s += used;
		if (cp < 0 || (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') ||
		    cp == 0xfffe || cp == 0xffff)
			cp = 0xfffd;
		switch (cp) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (cp < 0x7f && cp != '\r')
				fputc(cp, f);
			else
				fprintf(f, "&#x%x;", (unsigned)cp);
		}
	}
}


const char *out_drop_unit(const struct fr_drop_count *d)
{
	if (!FR_DROP_LOSES_EVENT(d->reason))
		return "stack";
	/* the hold counts what it could not hold, not the events it missed */
	if (d->reason == FR_DROP_NOT_ATTACHED)
		return !strncmp(d->probe, "rdma", sizeof(d->probe)) ? "qp_or_context" : "dlopen";
	return "event";
}

void out_json_losses(FILE *f, const struct trace_file *tf)
{
	uint32_t n = 0;
	const struct fr_drop_count *d = trace_file_drops(tf, &n);
	fputc('[', f);
	for (uint32_t i = 0; d && i < n; i++) {
		char probe[17];
		memcpy(probe, d[i].probe, 16);
		probe[16] = '\0';
		fprintf(f, "%s{\"probe\":", i ? "," : "");
		out_json_str(f, probe);
		fprintf(f, ",\"reason\":");
		out_json_str(f, fr_drop_reason_name(d[i].reason));
		fprintf(f, ",\"count\":%" PRIu64 ",\"lost\":\"%s\"", d[i].count,
			out_drop_unit(&d[i]));
		double first, last;
		if (trace_file_drop_window(tf, &d[i], &first, &last))
			fprintf(f, ",\"first_s\":%.6f,\"last_s\":%.6f", first, last);
		else
			fprintf(f, ",\"first_s\":null,\"last_s\":null");
		fputc('}', f);
	}
	fputc(']', f);
}

const char *out_iso_time(uint64_t realtime_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(realtime_ns / 1000000000ull);
	struct tm tm;
	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, len, "(invalid time %" PRIu64 " ns)", realtime_ns);
		return buf;
	}
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", date, (unsigned)(realtime_ns / 1000000ull % 1000));
	return buf;
}

const char *out_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return buf;
	}
	double v = (double)bytes / 1024;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

const char *out_duration(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000000ull)
		snprintf(buf, len, "%.3f s", (double)ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else if (ns >= 1000ull)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " ns", ns);
	return buf;
}
