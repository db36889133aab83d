/* The printable names of chunk types and codecs. */
#include "frec_reader.h"

const char *frec_chunk_type_name(uint16_t type)
{
	switch (type) {
	case FR_CHUNK_SCHEMA: return "schema";
	case FR_CHUNK_EVENTS: return "events";
	case FR_CHUNK_META: return "meta";
	case FR_CHUNK_INDEX: return "index";
	case FR_CHUNK_END: return "end";
	default: return "unknown";
	}
}

const char *frec_codec_name(uint8_t codec)
{
	switch (codec) {
	case FR_CODEC_NONE: return "none";
	case FR_CODEC_ZSTD: return "zstd";
	case FR_CODEC_ZLIB: return "zlib";
	default: return "unknown";
	}
}
