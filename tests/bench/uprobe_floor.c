/* Attaches the floor probes (uprobe_floor.bpf.c) to cudaMalloc and cudaFree
 * of a library, drains the ring every millisecond, runs a command, reports
 * the events it saw.  usage: uprobe_floor LIB -- COMMAND... */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uprobe_floor.skel.h"

static long events;

static int count(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	events++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: uprobe_floor LIB -- COMMAND...\n");
		return 2;
	}
	struct uprobe_floor_bpf *skel = uprobe_floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "uprobe_floor: cannot load (root?)\n");
		return 1;
	}
	const char *fns[] = {"cudaMalloc", "cudaFree"};
	struct bpf_link *links[4];
	for (int i = 0; i < 2; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, in, .func_name = fns[i]);
		LIBBPF_OPTS(bpf_uprobe_opts, out, .func_name = fns[i], .retprobe = true);
		links[2 * i] = bpf_program__attach_uprobe_opts(skel->progs.floor_enter, -1, argv[1], 0, &in);
		links[2 * i + 1] = bpf_program__attach_uprobe_opts(skel->progs.floor_exit, -1, argv[1], 0, &out);
		if (!links[2 * i] || !links[2 * i + 1]) {
			fprintf(stderr, "uprobe_floor: cannot attach %s in %s\n", fns[i], argv[1]);
			return 1;
		}
	}
	struct ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.floor_events), count, NULL, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(argv[3], &argv[3]);
		_exit(127);
	}
	int status = 0;
	struct timespec ms = {0, 1000000};
	while (waitpid(pid, &status, WNOHANG) == 0) {
		ring_buffer__consume(rb);
		nanosleep(&ms, NULL);
	}
	ring_buffer__consume(rb);
	fprintf(stderr, "uprobe_floor: %ld events\n", events);
	ring_buffer__free(rb);
	for (int i = 0; i < 4; i++)
		bpf_link__destroy(links[i]);
	uprobe_floor_bpf__destroy(skel);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
