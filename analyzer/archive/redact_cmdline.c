/* The redactor's rules for environment entries and command lines (the
 * contract is redact_help_text in redact.c): which environment values stay
 * because they explain the job's behaviour or the analyses read them, and
 * which of the recorder's own options stay in the file header's command
 * line.  Not for paths (redact_paths.c). */
#include "redact_impl.h"

#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int starts_with(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(s, prefix, k) == 0;
}

/* Kept with --redact: what explains the job's behaviour. */
static const char *const env_keep[] = {
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
	"GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
};
static const char *const env_keep_prefix[] = { "PYTORCH_", "NCCL_", "CUDA_", "TORCH_" };
/* Kept with --redact-all too: what the analyses read (ranks). */
static const char *const env_keep_all[] = { "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE" };
static const char *const env_host[] = { "MASTER_ADDR", "HOST", "HOSTNAME" };
static const char *const env_user[] = { "USER", "LOGNAME", "USERNAME" };

static int key_in(const char *key, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && !memcmp(key, list[i], n))
			return 1;
	return 0;
}

static int env_kept(const struct redactor *r, const char *key, size_t n)
{
	if (r->all)
		return key_in(key, n, env_keep_all, COUNT(env_keep_all));
	if (key_in(key, n, env_keep, COUNT(env_keep)))
		return 1;
	for (size_t i = 0; i < COUNT(env_keep_prefix); i++)
		if (starts_with(key, n, env_keep_prefix[i]) && n > strlen(env_keep_prefix[i]))
			return 1;
	return 0;
}

int rd_env(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	const char *eq = memchr(s, '=', n);
	if (!eq) /* not KEY=VALUE: all of it is a value */
		return n ? rd_token(r, RD_ENV, s, n, out) : 0;
	size_t key_len = (size_t)(eq - s);
	const char *value = eq + 1;
	size_t value_len = n - key_len - 1;
	if (rd_put(out, s, key_len + 1))
		return -1;
	if (!value_len)
		return 0;
	if (env_kept(r, s, key_len)) {
		if (memchr(value, '/', value_len))
			return rd_path(r, value, value_len, out);
		return rd_put(out, value, value_len);
	}
	enum rd_kind kind = key_in(s, key_len, env_host, COUNT(env_host))   ? RD_HOST
			    : key_in(s, key_len, env_user, COUNT(env_user)) ? RD_USER
									    : RD_ENV;
	return rd_token(r, kind, value, value_len, out);
}

/* ---- command lines -------------------------------------------------------- */

/* Calls fn on each argument of n bytes of NUL-terminated argv (the last
 * one may lack its NUL), then puts the NUL back when there was one. */
static int each_arg(struct redactor *r, const char *s, size_t n, struct rd_buf *out,
		    int (*fn)(struct redactor *, const char *, size_t, size_t, struct rd_buf *, void *),
		    void *state)
{
	for (size_t at = 0, index = 0; at < n; index++) {
		const char *end = memchr(s + at, '\0', n - at);
		size_t len = end ? (size_t)(end - (s + at)) : n - at;
		if (fn(r, s + at, len, index, out, state) || (end && rd_put(out, "", 1)))
			return -1;
		at += len + (end ? 1 : 0);
	}
	return 0;
}

static int token_arg(struct redactor *r, const char *s, size_t n, size_t index,
		     struct rd_buf *out, void *state)
{
	(void)index;
	(void)state;
	return n ? rd_token(r, RD_CMDLINE, s, n, out) : 0;
}

int rd_argv(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	rd_count_cmdline(r, s, n);
	return each_arg(r, s, n, out, token_arg, NULL);
}

/* The recorder's options (recorder/options.c): value 1 when its value is
 * kept (a setting that explains the recording), 0 when it is redacted (a
 * path, a cgroup), -1 when it takes none. */
struct rec_option {
	const char *name;
	char short_name;
	int value;
};
static const struct rec_option rec_options[] = {
	{ "output", 'o', 0 },          { "freq", 'F', 1 },
	{ "duration", 'd', 1 },        { "probes", 'P', 1 },
	{ "pid", 'p', 1 },             { "cgroup", 'G', 0 },
	{ "syscall-min-us", 0, 1 },    { "no-syscall-stacks", 0, -1 },
	{ "stack", 0, 1 },             { "ring-mib", 0, 1 },
	{ "codec", 0, 1 },             { "level", 0, 1 },
	{ "chunk-kib", 0, 1 },         { "test-realtime-offset", 0, 1 },
	{ "lib", 0, 0 },               { "launch-stack-every", 0, 1 },
	{ "step-marker", 0, 1 },       { "rdma-counters", 0, 0 },
	{ "stack-size", 0, 1 },        { "no-python", 0, -1 },
	{ "verbose", 'v', -1 },        { "quiet", 'q', -1 },
	{ "force", 0, -1 },            { "help", 'h', -1 },
	{ "buffer-mib", 0, 1 },        { "ring", 0, 1 },
	{ "trigger", 0, 1 },           { "hang-timeout", 0, 1 },
	{ "trigger-delay", 0, 1 },     { "max-snapshots", 0, 1 },
	{ "max-snapshot-bytes", 0, 1 }, { "snapshot-interval", 0, 1 },
	{ "on-snapshot", 0, 0 },
};

struct header_state {
	int recorder;   /* argv[0] is flightrec: its options are parsed */
	int after_dashes; /* past "--": the target command */
	int value;      /* the next argument is an option's value: 1 kept, 0 redacted, -1 none */
};

static const struct rec_option *long_option(const char *name, size_t n)
{
	for (size_t i = 0; i < COUNT(rec_options); i++)
		if (strlen(rec_options[i].name) == n && !memcmp(rec_options[i].name, name, n))
			return &rec_options[i];
	return NULL;
}

static const struct rec_option *short_option(char c)
{
	for (size_t i = 0; i < COUNT(rec_options); i++)
		if (rec_options[i].short_name == c)
			return &rec_options[i];
	return NULL;
}

static int kept_or_token(struct redactor *r, int keep, const char *s, size_t n, struct rd_buf *out)
{
	if (!n)
		return 0;
	return keep ? rd_put(out, s, n) : rd_token(r, RD_CMDLINE, s, n, out);
}

static int header_arg(struct redactor *r, const char *s, size_t n, size_t index,
		      struct rd_buf *out, void *state)
{
	struct header_state *h = state;
	if (index == 0) {
		size_t slash = n;
		while (slash > 0 && s[slash - 1] != '/')
			slash--;
		h->recorder = n - slash == 9 && !memcmp(s + slash, "flightrec", 9);
		h->value = -1;
		if (h->recorder)
			return slash ? rd_path(r, s, n, out) : rd_put(out, s, n);
		return kept_or_token(r, 0, s, n, out);
	}
	if (!h->recorder || h->after_dashes)
		return kept_or_token(r, 0, s, n, out);
	if (h->value >= 0) { /* the value of the option before */
		int keep = h->value;
		h->value = -1;
		return kept_or_token(r, keep, s, n, out);
	}
	if (n == 2 && s[0] == '-' && s[1] == '-') {
		h->after_dashes = 1;
		return rd_put(out, s, n);
	}
	if (n > 2 && s[0] == '-' && s[1] == '-') {
		const char *eq = memchr(s, '=', n);
		size_t name_len = (eq ? (size_t)(eq - s) : n) - 2;
		const struct rec_option *o = long_option(s + 2, name_len);
		if (!eq) {
			if (!o)
				return kept_or_token(r, 0, s, n, out); /* not the recorder's */
			h->value = o->value;
			return rd_put(out, s, n);
		}
		size_t head = (size_t)(eq - s) + 1;
		return rd_put(out, s, head) ||
		       kept_or_token(r, o && o->value == 1, s + head, n - head, out);
	}
	if (n > 1 && s[0] == '-') { /* short options, maybe with the value attached */
		for (size_t i = 1; i < n; i++) {
			const struct rec_option *o = short_option(s[i]);
			if (!o) /* not the recorder's: the rest is a value of unknown meaning */
				return rd_put(out, s, i) || kept_or_token(r, 0, s + i, n - i, out);
			if (o->value >= 0) {
				if (i + 1 < n)
					return rd_put(out, s, i + 1) ||
					       kept_or_token(r, o->value == 1, s + i + 1, n - i - 1, out);
				h->value = o->value;
			}
		}
		return rd_put(out, s, n);
	}
	/* the subcommand stays; any other word is not an option's */
	int keep = index == 1 && n == 6 && !memcmp(s, "record", 6);
	return kept_or_token(r, keep, s, n, out);
}

int rd_header_argv(struct redactor *r, const char *s, size_t n, struct rd_buf *out)
{
	struct header_state h = { 0 };
	rd_count_cmdline(r, s, n);
	return each_arg(r, s, n, out, header_arg, &h);
}
