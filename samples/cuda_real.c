/* cuda_real: calls a libcudart given by path (NVIDIA's real one, typically)
 * and prints each call's return code.
 *
 * What it is for: checking that flightrec's cuda probes attach to NVIDIA's
 * own library and record its calls and error codes, on a machine with the
 * CUDA toolkit but no GPU or driver (where every call fails, which is the
 * point: the recorder must show the error numbers).  The library is
 * dlopen'ed, so the program builds without CUDA and the library appears
 * after start, as with frameworks that load CUDA lazily.
 * What it is NOT for: using a GPU.
 *
 * Usage: cuda_real LIBCUDART [--hold-ms MS] [--wait-usr1]
 *   e.g. cuda_real /usr/local/cuda/lib64/libcudart.so.13
 *   --hold-ms    sleep after dlopen before the calls (time for a recorder
 *                to attach to the newly mapped library; default 0)
 *   --wait-usr1  print "cuda_real: waiting for SIGUSR1" and wait for it
 *                before the dlopen (a test decides when the library is
 *                loaded)
 * Calls, each from its own function, printing "cuda_real: CALL -> CODE NAME":
 *   call_get_device_count  cudaGetDeviceCount(&n)
 *   call_malloc            cudaMalloc(&p, 1 MiB)
 *   call_free_null         cudaFree(NULL)
 * Without a driver NVIDIA's runtime returns cudaErrorInsufficientDriver (35)
 * or cudaErrorNoDevice (100).  Exit 0 when the calls were made, 1 when the
 * library or a symbol could not be loaded, 2 on usage errors.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif

/* cudaError_t is an enum: an int in the x86-64 ABI. */
typedef int (*get_device_count_fn)(int *);
typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);
typedef const char *(*error_name_fn)(int);

static error_name_fn error_name;

static void report(const char *call, int code)
{
	printf("cuda_real: %s -> %d %s\n", call, code, error_name ? error_name(code) : "?");
	fflush(stdout);
}

static NOINLINE void call_get_device_count(get_device_count_fn fn)
{
	int n = -1;
	int code = fn(&n);
	report("cudaGetDeviceCount", code);
	printf("cuda_real: device count %d\n", n);
}

static NOINLINE void call_malloc(malloc_fn fn)
{
	void *p = NULL;
	report("cudaMalloc", fn(&p, 1 << 20));
}

static NOINLINE void call_free_null(free_fn fn)
{
	report("cudaFree", fn(NULL));
}

int main(int argc, char **argv)
{
	long hold_ms = 0;
	int wait_usr1 = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--hold-ms") && i + 1 < argc)
			hold_ms = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--wait-usr1"))
			wait_usr1 = 1;
		else
			argc = 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: cuda_real LIBCUDART [--hold-ms MS] [--wait-usr1]\n");
		return 2;
	}
	if (wait_usr1) {
		sigset_t set;
		int sig;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("cuda_real: waiting for SIGUSR1\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "cuda_real: cannot load %s: %s\n", argv[1], dlerror());
		return 1;
	}
	get_device_count_fn get_device_count = (get_device_count_fn)dlsym(lib, "cudaGetDeviceCount");
	malloc_fn cuda_malloc = (malloc_fn)dlsym(lib, "cudaMalloc");
	free_fn cuda_free = (free_fn)dlsym(lib, "cudaFree");
	error_name = (error_name_fn)dlsym(lib, "cudaGetErrorName");
	if (!get_device_count || !cuda_malloc || !cuda_free) {
		fprintf(stderr, "cuda_real: %s lacks cudaGetDeviceCount/cudaMalloc/cudaFree\n", argv[1]);
		return 1;
	}
	printf("cuda_real: loaded %s\n", argv[1]);
	fflush(stdout);
	if (hold_ms > 0) {
		struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	call_get_device_count(get_device_count);
	call_malloc(cuda_malloc);
	call_free_null(cuda_free);
	return 0;
}
