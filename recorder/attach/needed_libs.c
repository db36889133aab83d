/* DT_NEEDED closure of a program (see needed_libs.h). */
#include "attach/needed_libs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/safe_open.h"

#define MAX_FILES 512
#define MAX_DIRS 64

struct walk {
	char *files[MAX_FILES];
	int n_files;
	char *sys_dirs[MAX_DIRS];
	int n_sys_dirs;
};

static void add_dir(struct walk *w, const char *d)
{
	if (w->n_sys_dirs < MAX_DIRS && d[0] == '/')
		w->sys_dirs[w->n_sys_dirs++] = strdup(d);
}

/* /etc/ld.so.conf.d/ *.conf: one directory per line ("include" lines skipped) */
static void load_conf_dirs(struct walk *w)
{
	DIR *d = opendir("/etc/ld.so.conf.d");
	struct dirent *de;
	char path[PATH_MAX], line[PATH_MAX];

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".conf"))
			continue;
		snprintf(path, sizeof(path), "/etc/ld.so.conf.d/%s", de->d_name);
		FILE *f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, " \t\r\n#")] = 0;
			if (line[0] == '/')
				add_dir(w, line);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	static const char *defaults[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					 "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		add_dir(w, defaults[i]);
}

static int seen(struct walk *w, const char *real)
{
	for (int i = 0; i < w->n_files; i++)
		if (!strcmp(w->files[i], real))
			return 1;
	return 0;
}

/* Tries dir/name; on success returns a malloc'd real path. */
static char *try_dir(const char *dir, size_t dir_len, const char *name)
{
	char path[PATH_MAX], real[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%.*s/%s", (int)dir_len, dir, name) >= sizeof(path))
		return NULL;
	if (access(path, R_OK) || !realpath(path, real))
		return NULL;
	return strdup(real);
}

/* Searches a ':'-separated list with $ORIGIN replaced by origin. */
static char *try_list(const char *list, const char *origin, const char *name)
{
	char buf[4096];
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len >= 7 && !strncmp(p, "$ORIGIN", 7)) {
			snprintf(buf, sizeof(buf), "%s%.*s", origin, (int)(len - 7), p + 7);
		} else if (len >= 9 && !strncmp(p, "${ORIGIN}", 9)) {
			snprintf(buf, sizeof(buf), "%s%.*s", origin, (int)(len - 9), p + 9);
		} else {
			snprintf(buf, sizeof(buf), "%.*s", (int)len, p);
		}
		char *r = buf[0] ? try_dir(buf, strlen(buf), name) : NULL;
		if (r)
			return r;
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

int needed_read_dynamic(int fd, struct needed_dynamic *out)
{
	Elf *e;
	Elf_Scn *scn = NULL;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		return -1;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -1;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn))
				break;
			const char *s = NULL;
			if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_RPATH || dyn.d_tag == DT_RUNPATH)
				s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			/* a name no path buffer holds finds no file: not kept
			 * (and a crafted string table of megabytes is not
			 * copied once per entry) */
			if (!s || strnlen(s, PATH_MAX) == PATH_MAX)
				continue;
			if (dyn.d_tag == DT_NEEDED) {
				if (out->n_needed < NEEDED_MAX && (out->needed[out->n_needed] = strdup(s)))
					out->n_needed++;
			} else {
				char **dst = dyn.d_tag == DT_RPATH ? &out->rpath : &out->runpath;
				free(*dst);
				*dst = strdup(s);
			}
		}
		/* the dynamic linker reads one dynamic section (PT_DYNAMIC);
		 * more are a crafted file's way to multiply the work */
		break;
	}
	elf_end(e);
	return 0;
}

void needed_dynamic_free(struct needed_dynamic *d)
{
	for (int i = 0; i < d->n_needed; i++)
		free(d->needed[i]);
	free(d->rpath);
	free(d->runpath);
	memset(d, 0, sizeof(*d));
}

static void walk_file(struct walk *w, const char *real)
{
	/* on the heap, not in this frame: the walk recurses once per library
	 * in a chain (up to MAX_FILES deep), and 12 KiB a frame would overflow
	 * the stack on a crafted chain of libraries */
	struct needed_dynamic *dyn;
	char *origin;
	int fd;

	if (w->n_files >= MAX_FILES || seen(w, real))
		return;
	fd = safe_open_regular(AT_FDCWD, real, 0, NULL);
	/* a FIFO or device named as a library (DT_NEEDED "/dev/...") is no
	 * library: not listed, so no caller opens it (a FIFO would block,
	 * a device open can act) */
	if (fd < 0 && errno == EINVAL)
		return;
	w->files[w->n_files++] = strdup(real);
	if (fd < 0)
		return;
	dyn = malloc(sizeof(*dyn));
	if (!dyn || needed_read_dynamic(fd, dyn)) {
		close(fd);
		free(dyn);
		return;
	}
	close(fd);

	origin = strdup(real);
	char *slash = origin ? strrchr(origin, '/') : NULL;
	if (slash)
		*slash = 0;
	const char *ld_path = getenv("LD_LIBRARY_PATH");
	const char *rpath = dyn->rpath ? dyn->rpath : "", *runpath = dyn->runpath ? dyn->runpath : "";
	for (int i = 0; origin && i < dyn->n_needed; i++) {
		const char *name = dyn->needed[i];
		char *found = NULL;
		if (strchr(name, '/'))
			found = realpath(name, NULL);
		if (!found && rpath[0] && !runpath[0])
			found = try_list(rpath, origin, name);
		if (!found && ld_path)
			found = try_list(ld_path, origin, name);
		if (!found && runpath[0])
			found = try_list(runpath, origin, name);
		for (int k = 0; !found && k < w->n_sys_dirs; k++)
			found = try_dir(w->sys_dirs[k], strlen(w->sys_dirs[k]), name);
		if (found) {
			walk_file(w, found);
			free(found);
		}
	}
	free(origin);
	needed_dynamic_free(dyn);
	free(dyn);
}

static char *find_program(const char *program)
{
	char real[PATH_MAX];
	if (strchr(program, '/'))
		return realpath(program, real) ? strdup(real) : NULL;
	const char *path = getenv("PATH");
	char *r = path ? try_list(path, ".", program) : NULL;
	return r;
}

int needed_libs_walk(const char *program, void (*fn)(const char *path, void *ctx), void *ctx)
{
	struct walk w = {0};
	char *exe = find_program(program);
	if (!exe)
		return -1;
	load_conf_dirs(&w);
	walk_file(&w, exe);
	free(exe);
	for (int i = 0; i < w.n_files; i++) {
		fn(w.files[i], ctx);
		free(w.files[i]);
	}
	for (int i = 0; i < w.n_sys_dirs; i++)
		free(w.sys_dirs[i]);
	return w.n_files;
}
