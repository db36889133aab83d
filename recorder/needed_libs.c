/* DT_NEEDED closure of a program (see needed_libs.h). */
#include "needed_libs.h"

#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void walk_file(struct walk *w, const char *real)
{
	char rpath[4096] = "", runpath[4096] = "", origin[PATH_MAX];
	char *needed[128];
	int n_needed = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	int fd;

	if (w->n_files >= MAX_FILES || seen(w, real))
		return;
	w->files[w->n_files++] = strdup(real);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return;
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
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED && n_needed < 128)
				needed[n_needed++] = strdup(s);
			else if (dyn.d_tag == DT_RPATH)
				snprintf(rpath, sizeof(rpath), "%s", s);
			else if (dyn.d_tag == DT_RUNPATH)
				snprintf(runpath, sizeof(runpath), "%s", s);
		}
	}
	elf_end(e);
	close(fd);

	snprintf(origin, sizeof(origin), "%s", real);
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	const char *ld_path = getenv("LD_LIBRARY_PATH");
	for (int i = 0; i < n_needed; i++) {
		char *found = NULL;
		if (strchr(needed[i], '/'))
			found = realpath(needed[i], NULL);
		if (!found && rpath[0] && !runpath[0])
			found = try_list(rpath, origin, needed[i]);
		if (!found && ld_path)
			found = try_list(ld_path, origin, needed[i]);
		if (!found && runpath[0])
			found = try_list(runpath, origin, needed[i]);
		for (int k = 0; !found && k < w->n_sys_dirs; k++)
			found = try_dir(w->sys_dirs[k], strlen(w->sys_dirs[k]), needed[i]);
		if (found) {
			walk_file(w, found);
			free(found);
		}
		free(needed[i]);
	}
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
