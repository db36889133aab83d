/* Oracles for what the analyzer writes from a stranger's trace (fuzz_records,
 * fuzz_outputs): a crash is not the only failure.  Every check aborts with
 * what it found and where, so libFuzzer keeps the input as a crash.
 *
 *   fuzz_check_json    one JSON value (RFC 8259: strict numbers, escapes,
 *                      no control characters in strings, valid UTF-8,
 *                      nesting under 512), whitespace around it allowed
 *   fuzz_check_jsonl   one JSON value per non-empty line (dump)
 *   fuzz_check_text    text for a terminal: no control character but tab and
 *                      newline, so a trace cannot send escape sequences
 *   fuzz_check_markup  an HTML/SVG document: printable ASCII and whitespace
 *                      only (the writers escape everything else), and the
 *                      JSON after `start` valid up to `end`, which must
 *                      follow it directly (nothing broke out of the script)
 *   fuzz_check_pftrace a Perfetto protobuf trace (timeline --format perfetto):
 *                      nothing but Trace.packet (field 1, length-delimited)
 *                      records whose lengths add up to the file, each packet
 *                      and its track_event (11), interned_data (12) and
 *                      track_descriptor (60)
 *                      well-formed messages (known wire types, every length
 *                      inside its message), so a reader never runs off a
 *                      record or mistakes a string's bytes for fields */
#ifndef FLIGHTREC_FUZZ_CHECK_H
#define FLIGHTREC_FUZZ_CHECK_H

#include <stddef.h>

void fuzz_check_json(const char *s, size_t n, const char *what);
void fuzz_check_jsonl(const char *s, size_t n, const char *what);
void fuzz_check_text(const char *s, size_t n, const char *what);
void fuzz_check_markup(const char *s, size_t n, const char *start, const char *end,
		       const char *what);
void fuzz_check_pftrace(const char *s, size_t n, const char *what);

#endif
