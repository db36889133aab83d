/* Side-effect-free opening of files named by traced processes (see
 * safe_open.h). */
#include "inspect/safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* O_PATH resolution of path; openat2 where the kernel has it. */
static int resolve_path(int dirfd, const char *path, unsigned flags)
{
#ifdef SYS_openat2
	static int no_openat2; /* the kernel said ENOSYS once */
	if (!no_openat2) {
		struct open_how how = {.flags = O_PATH | O_CLOEXEC};
		if (flags & SAFE_OPEN_NOFOLLOW)
			how.resolve |= RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		if (flags & SAFE_OPEN_IN_ROOT)
			how.resolve |= RESOLVE_IN_ROOT;
		int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		no_openat2 = 1;
	}
#endif
	/* Without openat2 an absolute path would ignore dirfd (and escape the
	 * process's root): resolve it relative to dirfd instead.  Links in
	 * the middle of the path are then followed; callers check identity. */
	if (flags & SAFE_OPEN_IN_ROOT)
		while (*path == '/')
			path++;
	return openat(dirfd, *path ? path : ".",
		      O_PATH | O_CLOEXEC | ((flags & SAFE_OPEN_NOFOLLOW) ? O_NOFOLLOW : 0));
}

int safe_open_regular(int dirfd, const char *path, unsigned flags, struct stat *st)
{
	struct stat local;
	char self[64];

	if (!st)
		st = &local;
	int pfd = resolve_path(dirfd, path, flags);
	if (pfd < 0)
		return -1;
	/* O_PATH opened nothing: a device or FIFO is refused here, before any
	 * open(2) of it could have an effect */
	if (fstat(pfd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(pfd);
		errno = EINVAL;
		return -1;
	}
	/* the inode just checked, not whatever the name points to now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	int fd = open(self, O_RDONLY | O_CLOEXEC);
	int saved = errno;
	close(pfd);
	errno = saved;
	return fd;
}
