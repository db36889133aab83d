/* Stand-in libcupti.so.13: the part of NVIDIA's CUPTI that an injection
 * library uses to time kernels (one subscriber, runtime API callbacks,
 * kernel activity buffers, a timestamp callback), over the fake GPU of the
 * stand-in CUDA runtime (samples/cudart/), for machines without a GPU.
 *
 * Built against NVIDIA's cupti.h, so types, error numbers and the record
 * layout (CUpti_ActivityKernel10, kind CONCURRENT_KERNEL) are the real ones.
 * The runtime feeds it through fake_gpu_activity.h.
 *
 * Model:
 *   - one subscriber per process (CUPTI up to 13.2); with
 *     FLIGHTREC_FAKE_CUPTI_HELD=1 the slot is already taken (as by Nsight or
 *     Kineto) and cuptiSubscribe answers
 *     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED.
 *   - callbacks: RUNTIME_API domain only, ENTER and EXIT on the calling
 *     thread, correlation ids 1, 2, ... in call order.
 *   - activity: kernel records are written when the runtime launches (the
 *     fake GPU knows the kernel's start and end then) into buffers from the
 *     client's request callback; a buffer goes back to the client when full
 *     or at cuptiActivityFlushAll, on the thread that filled or flushed it
 *     (NVIDIA's uses a worker thread).  No buffer from the client: the
 *     record is dropped and counted (cuptiActivityGetNumDroppedRecords).
 *   - clock: the fake GPU's CLOCK_MONOTONIC times are moved into the
 *     registered timestamp callback's domain, else into CLOCK_REALTIME
 *     (NVIDIA's default on Linux), by one offset taken at the first record
 *     (again after a new callback), so durations are exact and back-to-back
 *     kernels stay back to back.
 *   - memcpy/memset/API activity kinds are accepted; no records are made.
 */
#include <cupti.h>

#include "fake_gpu_activity.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define RECORD_BYTES ((sizeof(CUpti_ActivityKernel10) + 7u) & ~(size_t)7u)
#define MAX_NAMES 1024

struct subscriber {
	CUpti_CallbackFunc fn;
	void *userdata;
	uint8_t runtime_cbids[1024]; /* enabled CUPTI_RUNTIME_TRACE_CBID_* */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct subscriber g_sub;
static int g_subscribed;
static uint32_t g_next_correlation;
static int g_kernel_activity;
static CUpti_BuffersCallbackRequestFunc g_request;
static CUpti_BuffersCallbackCompleteFunc g_complete;
static CUpti_TimestampCallbackFunc g_timestamp;
static uint8_t *g_buf;
static size_t g_buf_size, g_buf_used, g_buf_max_records, g_buf_records;
static size_t g_dropped;
static int g_offset_known;      /* fake GPU (monotonic) -> record clock */
static uint64_t g_offset;
static char *g_names[MAX_NAMES]; /* CUPTI owns kernel names, one copy each */
static unsigned g_n_names;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *intern_name(const char *name)
{
	for (unsigned i = 0; i < g_n_names; i++)
		if (!strcmp(g_names[i], name))
			return g_names[i];
	if (g_n_names == MAX_NAMES)
		return "(too many kernel names)";
	char *copy = strdup(name);
	if (!copy)
		return "(out of memory)";
	g_names[g_n_names++] = copy;
	return copy;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	switch (result) {
	case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
	case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
	case CUPTI_ERROR_INVALID_OPERATION: *str = "CUPTI_ERROR_INVALID_OPERATION"; break;
	case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
	case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
		break;
	default: *str = "CUPTI_ERROR_UNKNOWN"; return CUPTI_ERROR_INVALID_PARAMETER;
	}
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				  void *userdata)
{
	if (!subscriber || !callback)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const char *held = getenv("FLIGHTREC_FAKE_CUPTI_HELD");
	pthread_mutex_lock(&g_lock);
	CUptiResult r = CUPTI_SUCCESS;
	if (g_subscribed || (held && !strcmp(held, "1"))) {
		r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	} else {
		memset(&g_sub, 0, sizeof(g_sub));
		g_sub.fn = callback;
		g_sub.userdata = userdata;
		g_subscribed = 1;
		*subscriber = (CUpti_SubscriberHandle)&g_sub;
	}
	pthread_mutex_unlock(&g_lock);
	return r;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	pthread_mutex_lock(&g_lock);
	CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
	if (g_subscribed && subscriber == (CUpti_SubscriberHandle)&g_sub) {
		g_subscribed = 0;
		r = CUPTI_SUCCESS;
	}
	pthread_mutex_unlock(&g_lock);
	return r;
}

static CUptiResult enable(uint32_t on, CUpti_SubscriberHandle subscriber, CUpti_CallbackDomain domain,
			  int all, CUpti_CallbackId cbid)
{
	if (subscriber != (CUpti_SubscriberHandle)&g_sub || domain <= CUPTI_CB_DOMAIN_INVALID ||
	    domain >= CUPTI_CB_DOMAIN_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API)
		return CUPTI_SUCCESS; /* accepted; the fake driver fires none */
	if (!all && cbid >= sizeof(g_sub.runtime_cbids))
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&g_lock);
	if (all)
		memset(g_sub.runtime_cbids, on ? 1 : 0, sizeof(g_sub.runtime_cbids));
	else
		g_sub.runtime_cbids[cbid] = on ? 1 : 0;
	pthread_mutex_unlock(&g_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	return enable(on, subscriber, domain, 0, cbid);
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle subscriber,
				     CUpti_CallbackDomain domain)
{
	return enable(on, subscriber, domain, 1, 0);
}

static CUptiResult set_kind(CUpti_ActivityKind kind, int on)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		pthread_mutex_lock(&g_lock);
		g_kernel_activity = on;
		pthread_mutex_unlock(&g_lock);
		return CUPTI_SUCCESS;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
	case CUPTI_ACTIVITY_KIND_MEMSET:
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return CUPTI_SUCCESS;
	default:
		return CUPTI_ERROR_INVALID_KIND;
	}
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, 1); }
EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, 0); }

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
						  CUpti_BuffersCallbackCompleteFunc complete)
{
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&g_lock);
	g_request = request;
	g_complete = complete;
	pthread_mutex_unlock(&g_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	if (!fn)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&g_lock);
	g_timestamp = fn;
	g_offset_known = 0;
	pthread_mutex_unlock(&g_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
						     size_t *dropped)
{
	(void)context;
	(void)streamId;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&g_lock);
	*dropped = g_dropped;
	g_dropped = 0; /* NVIDIA's counts since the last query */
	pthread_mutex_unlock(&g_lock);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
					      CUpti_Activity **record)
{
	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t at = *record ? (size_t)((uint8_t *)*record - buffer) + RECORD_BYTES : 0;
	if (at + RECORD_BYTES > validBufferSizeBytes)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + at);
	return CUPTI_SUCCESS;
}

/* Hand the current buffer to the client; called with g_lock held, returns
 * with it held, calls the client without it. */
static void complete_buffer_locked(void)
{
	uint8_t *buf = g_buf;
	size_t size = g_buf_size, used = g_buf_used;
	CUpti_BuffersCallbackCompleteFunc complete = g_complete;
	g_buf = NULL;
	g_buf_size = g_buf_used = g_buf_records = g_buf_max_records = 0;
	if (!buf)
		return;
	pthread_mutex_unlock(&g_lock);
	complete(NULL, 0, buf, size, used);
	pthread_mutex_lock(&g_lock);
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag; /* every record is complete when written */
	pthread_mutex_lock(&g_lock);
	if (g_buf && g_buf_used)
		complete_buffer_locked();
	pthread_mutex_unlock(&g_lock);
	return CUPTI_SUCCESS;
}

EXPORT uint32_t fake_gpu_api_enter(uint32_t cbid, const char *function)
{
	pthread_mutex_lock(&g_lock);
	uint32_t id = ++g_next_correlation;
	int fire = g_subscribed && cbid < sizeof(g_sub.runtime_cbids) && g_sub.runtime_cbids[cbid];
	struct subscriber sub = g_sub;
	pthread_mutex_unlock(&g_lock);
	if (fire) {
		CUpti_CallbackData d = { .callbackSite = CUPTI_API_ENTER, .functionName = function,
					 .correlationId = id };
		sub.fn(sub.userdata, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
	}
	return id;
}

EXPORT void fake_gpu_api_exit(uint32_t cbid, const char *function, uint32_t correlation_id)
{
	pthread_mutex_lock(&g_lock);
	int fire = g_subscribed && cbid < sizeof(g_sub.runtime_cbids) && g_sub.runtime_cbids[cbid];
	struct subscriber sub = g_sub;
	pthread_mutex_unlock(&g_lock);
	if (fire) {
		CUpti_CallbackData d = { .callbackSite = CUPTI_API_EXIT, .functionName = function,
					 .correlationId = correlation_id };
		sub.fn(sub.userdata, CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &d);
	}
}

EXPORT void fake_gpu_kernel(const struct fake_gpu_kernel *k)
{
	pthread_mutex_lock(&g_lock);
	if (!g_kernel_activity || !g_request) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (!g_buf) {
		CUpti_BuffersCallbackRequestFunc request = g_request;
		uint8_t *buf = NULL;
		size_t size = 0, max_records = 0;
		pthread_mutex_unlock(&g_lock);
		request(&buf, &size, &max_records);
		pthread_mutex_lock(&g_lock);
		if (buf && size >= RECORD_BYTES && !g_buf) {
			g_buf = buf;
			g_buf_size = size;
			g_buf_max_records = max_records;
		}
	}
	if (!g_buf) {
		g_dropped++;
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (!g_offset_known) {
		g_offset = (g_timestamp ? g_timestamp() : clock_ns(CLOCK_REALTIME)) -
			   clock_ns(CLOCK_MONOTONIC);
		g_offset_known = 1;
	}
	uint64_t offset = g_offset;
	CUpti_ActivityKernel10 *r = (CUpti_ActivityKernel10 *)(g_buf + g_buf_used);
	memset(r, 0, RECORD_BYTES);
	r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	r->start = k->start_ns + offset;
	r->end = k->end_ns + offset;
	r->completed = r->end;
	r->deviceId = k->device;
	r->contextId = k->context;
	r->streamId = k->stream;
	r->gridX = k->grid[0];
	r->gridY = k->grid[1];
	r->gridZ = k->grid[2];
	r->blockX = k->block[0];
	r->blockY = k->block[1];
	r->blockZ = k->block[2];
	r->dynamicSharedMemory = k->dynamic_shared_bytes;
	r->registersPerThread = 32;
	r->correlationId = k->correlation_id;
	r->name = intern_name(k->name);
	g_buf_used += RECORD_BYTES;
	g_buf_records++;
	if (g_buf_used + RECORD_BYTES > g_buf_size ||
	    (g_buf_max_records && g_buf_records == g_buf_max_records))
		complete_buffer_locked();
	pthread_mutex_unlock(&g_lock);
}
