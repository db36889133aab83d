/* The redactor itself: its secret, its tokens, its counters, and
 * redact_help_text, the contract of what is redacted.  The rules for one
 * string are redact_paths.c (paths) and redact_cmdline.c (environment
 * entries, command lines); records are redact_records.c, files
 * redact_trace.c.
 *
 * A token is "<K:xxxxxxxx>": K says what it stands for (h host, c
 * command-line argument, e environment value, p path, u user) and the 8
 * hex digits are the first 4 bytes of HMAC-SHA-256(secret, value).  The
 * secret is random per redactor, so the files of one archive agree (the
 * same value gives the same digits, whatever its kind: a MASTER_ADDR joins
 * the header's host name) while nobody can test a guess against a token.
 * 32 bits: two of a few hundred hosts share a token about once in 10^5
 * archives.  Counters count distinct values: 64 other bits of the same
 * hash identify a value. */
#include "redact_impl.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

const char redact_help_text[] =
	"--redact replaces, in a copy of each trace, command lines, environment values, host names, "
	"user names and paths by tokens <K:xxxxxxxx> (K: h host, c command-line argument, e "
	"environment value, p path, u user; the digits are a hash keyed with a secret drawn for "
	"each archive and thrown away, so the same value gives the same token in every file of "
	"the archive, and files still join on hosts and ranks, but a token cannot be reversed by "
	"hashing guesses). Replaced: the host name of each file; every argument of each process's "
	"command line, and of the target command in the recorder's own command line (its options "
	"that explain the recording, such as --freq, --stack, --probes and --duration, stay; its "
	"output file, --cgroup, --lib and --rdma-counters values do not); every environment value "
	"except RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, "
	"GROUP_WORLD_SIZE, ROLE_WORLD_SIZE, OMP_NUM_THREADS, MKL_NUM_THREADS and PYTORCH_*, NCCL_*, "
	"CUDA_*, TORCH_* (the keys stay; MASTER_ADDR, HOST and HOSTNAME become host tokens, USER, "
	"LOGNAME and USERNAME user tokens, and a kept value that holds a '/' is redacted as a "
	"path); with --redact-all only RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE stay. "
	"Paths of mappings, symbol files, Python source files and probe attach messages are "
	"kept whole under /usr/lib, /usr/lib32, /usr/lib64, /lib, /lib32, /lib64, /usr/libexec, "
	"/usr/local/lib, /usr/local/lib64, /usr/local/cuda*, /usr/bin, /usr/sbin, /bin and /sbin, "
	"and for names in brackets ([kernel.kallsyms], [vdso], <frozen ...>); elsewhere a shared "
	"library keeps its file name (<p:xxxxxxxx>/libtorch_cuda.so: the token is its directory), "
	"a Python library file keeps its path from lib/pythonX.Y/, site-packages/ or "
	"dist-packages/ on (<p:xxxxxxxx>/lib/python3.11/site-packages/torch/nn/module.py), and any "
	"other path becomes one token that keeps the file's extension (<p:xxxxxxxx>.pt, "
	"<p:xxxxxxxx>.py), so user names in /home/NAME or /Users/NAME are inside a token. Raw "
	"user stacks (--stack dwarf) keep their return addresses and frame pointers, but every "
	"8-byte word in them made only of printable characters is zeroed (the command line and "
	"environment lie at the top of a main thread's stack; up to 7 characters at the ends of "
	"a string stay). Not "
	"redacted: process and thread names (comm), symbol names, build-ids, Python function "
	"names, library file names, the recorder's settings, every event, and record types this "
	"version does not know, which are copied as they are. The analyses give the same answers "
	"on the redacted copy; only the redacted text differs.";

/* ---- buffers -------------------------------------------------------------- */

int rd_put(struct rd_buf *b, const void *data, size_t n)
{
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		uint8_t *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

int rd_zeros(struct rd_buf *b, size_t n)
{
	static const uint8_t zeros[64];
	for (; n > sizeof(zeros); n -= sizeof(zeros))
		if (rd_put(b, zeros, sizeof(zeros)))
			return -1;
	return rd_put(b, zeros, n);
}

void rd_buf_free(struct rd_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* ---- the redactor and its counters --------------------------------------- */

struct redactor *redactor_new_keyed(int all, const uint8_t key[32])
{
	struct redactor *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->all = all != 0;
	memcpy(r->key, key, sizeof(r->key));
	return r;
}

/* 32 random bytes from the kernel; -1 when there are none. */
static int random_key(uint8_t key[32])
{
	size_t got = 0;
	while (got < 32) {
		ssize_t n = getrandom(key + got, 32 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == 32)
		return 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (got = 0; got < 32;) {
		ssize_t n = read(fd, key + got, 32 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return got == 32 ? 0 : -1;
}

struct redactor *redactor_new(int all)
{
	uint8_t key[32];
	if (random_key(key))
		return NULL;
	struct redactor *r = redactor_new_keyed(all, key);
	memset(key, 0, sizeof(key));
	return r;
}

void redactor_free(struct redactor *r)
{
	if (!r)
		return;
	for (int i = 0; i < RD_COUNTERS; i++)
		free(r->seen[i].slots);
	memset(r->key, 0, sizeof(r->key));
	free(r);
}

void redactor_counts(const struct redactor *r, struct redact_counts *out)
{
	out->cmdlines = r->seen[RD_N_CMDLINES].count;
	out->env_values = r->seen[RD_N_ENV].count;
	out->hosts = r->seen[RD_N_HOSTS].count;
	out->paths = r->seen[RD_N_PATHS].count;
	out->users = r->seen[RD_N_USERS].count;
}

/* Adds id to the set (load <= 1/2, linear probing).  A failed growth only
 * loses the count: redaction goes on. */
static void seen_add(struct redactor *r, enum rd_counter c, uint64_t id)
{
	struct rd_seen *s = &r->seen[c];
	if (!id)
		id = 1;
	if (2 * (s->count + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		uint64_t *slots = calloc(cap, sizeof(*slots));
		if (!slots) {
			r->oom = 1;
			return;
		}
		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slots[i])
				continue;
			size_t j = (size_t)s->slots[i] & (cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = s->slots[i];
		}
		free(s->slots);
		s->slots = slots;
		s->cap = cap;
	}
	size_t j = (size_t)id & (s->cap - 1);
	while (s->slots[j] && s->slots[j] != id)
		j = (j + 1) & (s->cap - 1);
	if (!s->slots[j]) {
		s->slots[j] = id;
		s->count++;
	}
}

static const enum rd_counter counter_of[RD_KINDS] = {
	[RD_HOST] = RD_N_HOSTS, [RD_CMDLINE] = RD_N_CMDLINES, [RD_ENV] = RD_N_ENV,
	[RD_PATH] = RD_N_PATHS, [RD_USER] = RD_N_USERS,
};

/* The keyed hash of a value: mac[0..3] make the token's digits, mac[8..15]
 * its id among the distinct values counted. */
static void keyed_hash(const struct redactor *r, const char *s, size_t n,
		       uint8_t mac[SHA256_DIGEST_BYTES])
{
	hmac_sha256(r->key, sizeof(r->key), s, n, mac);
}

static uint64_t id_of(const uint8_t mac[SHA256_DIGEST_BYTES])
{
	uint64_t id = 0;
	for (int i = 8; i < 16; i++)
		id = id << 8 | mac[i];
	return id;
}

int rd_token(struct redactor *r, enum rd_kind kind, const char *s, size_t n, struct rd_buf *out)
{
	static const char letters[RD_KINDS] = { 'h', 'c', 'e', 'p', 'u' };
	static const char hex[] = "0123456789abcdef";
	uint8_t mac[SHA256_DIGEST_BYTES];
	keyed_hash(r, s, n, mac);
	/* command-line arguments count per whole line (rd_count_cmdline) */
	if (kind != RD_CMDLINE)
		seen_add(r, counter_of[kind], id_of(mac));
	char tok[13] = { '<', letters[kind], ':' };
	for (int i = 0; i < 4; i++) {
		tok[3 + 2 * i] = hex[mac[i] >> 4];
		tok[4 + 2 * i] = hex[mac[i] & 15];
	}
	tok[11] = '>';
	return rd_put(out, tok, 12);
}

int rd_count_cmdline(struct redactor *r, const char *s, size_t n)
{
	uint8_t mac[SHA256_DIGEST_BYTES];
	if (n) {
		keyed_hash(r, s, n, mac);
		seen_add(r, RD_N_CMDLINES, id_of(mac));
	}
	return 0;
}
