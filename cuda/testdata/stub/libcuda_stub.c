// A stand-in libcuda.so.1 for cuda's tests, over host memory: gcc builds it
// into a temporary directory (soname libcuda.so.1) and the tests load it
// through the same dlopen/dlsym path as the real driver. It implements every
// entry point package cuda resolves, checks what a real driver would refuse
// (no current context, a pointer outside its allocation, an event of
// another context, a function of another context's module, PTX without the
// kernels or with other parameters), and runs the kernels as C on host
// memory. Device memory is malloc'd; event times come from clock_gettime.
//
// package cuda calls it from several threads at once (operations on
// different devices run concurrently), so its tables are guarded by one
// mutex, held only for table look-ups and updates: a copy, a kernel or an
// injected sleep runs outside it, and calls on two devices overlap.
//
// Switches, read from its own environment at each call (tests only):
//   STUB_CUDA_DEVICES=N          devices reported (default 2, at most 8)
//   STUB_CUDA_FAIL=call=code,... the named entry points return that CUresult
//   STUB_CUDA_HANG=call=ms       the named entry point sleeps ms first
//   (in both, call@N=... applies only while device N's context is current)
//   STUB_CUDA_STUCK=N            N words of every pattern buffer have bit 0
//                                stuck at 0 (a pattern and its complement
//                                then miscompare N times in all)
//   STUB_CUDA_NOPEER=1           cuDeviceCanAccessPeer says no
//   STUB_CUDA_BADFMA=1           fma_loop computes one too many
//   STUB_CUDA_LOG=path           one line per call appended to path; an
//                                fma_loop launch's line ends with its
//                                device and CLOCK_MONOTONIC start and end
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct stub_ctx *CUcontext;
typedef struct stub_mod *CUmodule;
typedef struct stub_func *CUfunction;
typedef struct stub_event *CUevent;
typedef void *CUstream;

enum {
	SUCCESS = 0,
	INVALID_VALUE = 1,
	NOT_INITIALIZED = 3,
	NO_DEVICE = 100,
	INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201,
	PEER_ACCESS_UNSUPPORTED = 217,
	INVALID_PTX = 218,
	INVALID_HANDLE = 400,
	NOT_FOUND = 500,
	ILLEGAL_ADDRESS = 700,
	PEER_ACCESS_ALREADY_ENABLED = 704,
};

#define MAXDEV 8
#define MAXALLOC 4096
#define MAXEVENT 256
#define MAXMOD 64

struct stub_ctx {
	int dev;
	int retained;
	int peer[MAXDEV];
};
struct stub_mod {
	int used;
	CUcontext ctx;
	int has[3]; // fma_loop, pattern_write, pattern_check
};
struct stub_func {
	CUmodule mod;
	int kind;
};
struct stub_event {
	int used;
	CUcontext ctx;
	int recorded;
	double t;
};
struct alloc {
	char *p;
	size_t n;
	int host;
	CUcontext ctx;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t logmu = PTHREAD_MUTEX_INITIALIZER;
static int initialized; // atomic
static struct stub_ctx ctxs[MAXDEV];
static struct stub_mod mods[MAXMOD];
static struct stub_func funcs[MAXMOD][3];
static struct stub_event events[MAXEVENT];
static struct alloc allocs[MAXALLOC];

static const char *kernel_names[3] = {"fma_loop", "pattern_write", "pattern_check"};
// The parameter types each kernel must declare, in order.
static const char *kernel_params[3] = {"u64,u32,f32,f32", "u64,u64,u32", "u64,u64,u32,u64"};

// logf_ appends one line to STUB_CUDA_LOG with one write, under logmu:
// lines from calls on several threads never interleave.
static void logf_(const char *fmt, ...) {
	const char *path = getenv("STUB_CUDA_LOG");
	if (path == NULL || *path == 0) {
		return;
	}
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		return;
	}
	if ((size_t)n > sizeof line - 2) {
		n = sizeof line - 2;
	}
	line[n++] = '\n';
	pthread_mutex_lock(&logmu);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t w = write(fd, line, n);
		(void)w;
		close(fd);
	}
	pthread_mutex_unlock(&logmu);
}

// lookup finds name's value in a "name=value,name=value" switch.
static long lookup(const char *env, const char *name, long none) {
	const char *s = getenv(env);
	size_t n = strlen(name);
	while (s != NULL && *s) {
		if (strncmp(s, name, n) == 0 && s[n] == '=') {
			return strtol(s + n + 1, NULL, 10);
		}
		s = strchr(s, ',');
		if (s != NULL) {
			s++;
		}
	}
	return none;
}

static long envnum(const char *env, long none) {
	const char *s = getenv(env);
	return s != NULL && *s ? strtol(s, NULL, 10) : none;
}

static __thread CUcontext current;

// lookup_dev is lookup of "call@N" (N: the device whose context is current
// on this thread), then of call.
static long lookup_dev(const char *env, const char *call) {
	if (current != NULL) {
		char key[96];
		snprintf(key, sizeof key, "%s@%d", call, current->dev);
		long v = lookup(env, key, 0);
		if (v != 0) {
			return v;
		}
	}
	return lookup(env, call, 0);
}

// enter sleeps where STUB_CUDA_HANG says and returns the CUresult
// STUB_CUDA_FAIL injects for this call (0: none).
static CUresult enter(const char *call) {
	long ms = lookup_dev("STUB_CUDA_HANG", call);
	if (ms > 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0) {
		}
	}
	return (CUresult)lookup_dev("STUB_CUDA_FAIL", call);
}

#define ENTER(name)                    \
	do {                               \
		CUresult inj_ = enter(name);   \
		if (inj_ != 0) {               \
			logf_("%s fail=%d", name, inj_); \
			return inj_;               \
		}                              \
	} while (0)

#define NEED_INIT() \
	do { if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) return NOT_INITIALIZED; } while (0)
#define NEED_CTX() \
	do { NEED_INIT(); if (!live_ctx(current)) return INVALID_CONTEXT; } while (0)

static int live_ctx_locked(CUcontext c) {
	return c != NULL && c >= &ctxs[0] && c < &ctxs[MAXDEV] && c->retained > 0;
}

static int live_ctx(CUcontext c) {
	pthread_mutex_lock(&mu);
	int ok = live_ctx_locked(c);
	pthread_mutex_unlock(&mu);
	return ok;
}

static int ndev(void) {
	long n = envnum("STUB_CUDA_DEVICES", 2);
	return n < 0 ? 0 : n > MAXDEV ? MAXDEV : (int)n;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

// find returns the allocation holding [p, p+n), or NULL.
static struct alloc *find(const void *p, size_t n, int host) {
	const char *c = p;
	for (int i = 0; i < MAXALLOC; i++) {
		struct alloc *a = &allocs[i];
		if (a->p != NULL && a->host == host && c >= a->p && n <= a->n && c + n <= a->p + a->n) {
			return a;
		}
	}
	return NULL;
}

static CUresult add_alloc(size_t n, int host, void **out) {
	if (n == 0) {
		return INVALID_VALUE;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXALLOC; i++) {
		if (allocs[i].p == NULL) {
			allocs[i].p = malloc(n);
			if (allocs[i].p == NULL) {
				pthread_mutex_unlock(&mu);
				return 2; // CUDA_ERROR_OUT_OF_MEMORY
			}
			allocs[i].n = n;
			allocs[i].host = host;
			allocs[i].ctx = current;
			*out = allocs[i].p;
			pthread_mutex_unlock(&mu);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return 2;
}

static CUresult del_alloc(void *p, int host) {
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXALLOC; i++) {
		if (allocs[i].p == p && p != NULL && allocs[i].host == host) {
			free(allocs[i].p);
			allocs[i].p = NULL;
			pthread_mutex_unlock(&mu);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return INVALID_VALUE;
}

CUresult cuInit(unsigned int flags) {
	ENTER("cuInit");
	logf_("cuInit");
	if (flags != 0) {
		return INVALID_VALUE;
	}
	if (ndev() == 0) {
		return NO_DEVICE;
	}
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	return SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
	ENTER("cuDriverGetVersion");
	*v = 12040;
	return SUCCESS;
}

CUresult cuDeviceGetCount(int *n) {
	ENTER("cuDeviceGetCount");
	NEED_INIT();
	*n = ndev();
	return SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int i) {
	ENTER("cuDeviceGet");
	NEED_INIT();
	if (i < 0 || i >= ndev()) {
		return INVALID_DEVICE;
	}
	*d = i;
	return SUCCESS;
}

static int bad_dev(CUdevice d) { return d < 0 || d >= ndev(); }

CUresult cuDeviceGetName(char *s, int len, CUdevice d) {
	ENTER("cuDeviceGetName");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	snprintf(s, len, "Stub GPU %d", d);
	return SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d) {
	ENTER("cuDeviceGetPCIBusId");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	snprintf(s, len, "0000:%02X:00.0", 0x18 + 0x12 * d);
	return SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) {
	ENTER("cuDeviceTotalMem_v2");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	*b = (size_t)80 << 30;
	return SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	ENTER("cuDeviceGetAttribute");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	*v = attr == 16 ? 1 : 0; // one SM: the C kernels stay cheap
	return SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	ENTER("cuDevicePrimaryCtxRetain");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	pthread_mutex_lock(&mu);
	ctxs[d].dev = d;
	ctxs[d].retained++;
	pthread_mutex_unlock(&mu);
	*c = &ctxs[d];
	logf_("cuDevicePrimaryCtxRetain dev=%d", d);
	return SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	ENTER("cuDevicePrimaryCtxRelease_v2");
	NEED_INIT();
	if (bad_dev(d)) {
		return INVALID_DEVICE;
	}
	pthread_mutex_lock(&mu);
	if (ctxs[d].retained == 0) {
		pthread_mutex_unlock(&mu);
		return INVALID_CONTEXT;
	}
	if (--ctxs[d].retained == 0) {
		memset(ctxs[d].peer, 0, sizeof ctxs[d].peer);
	}
	pthread_mutex_unlock(&mu);
	logf_("cuDevicePrimaryCtxRelease_v2 dev=%d", d);
	return SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) {
	ENTER("cuCtxSetCurrent");
	NEED_INIT();
	if (c != NULL && !live_ctx(c)) {
		return INVALID_CONTEXT;
	}
	current = c;
	return SUCCESS;
}

CUresult cuCtxSynchronize(void) {
	ENTER("cuCtxSynchronize");
	NEED_CTX();
	return SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) {
	ENTER("cuDeviceCanAccessPeer");
	NEED_INIT();
	if (bad_dev(d) || bad_dev(peer)) {
		return INVALID_DEVICE;
	}
	*can = d != peer && envnum("STUB_CUDA_NOPEER", 0) == 0;
	return SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
	ENTER("cuCtxEnablePeerAccess");
	NEED_CTX();
	if (flags != 0 || !live_ctx(peer) || peer == current) {
		return INVALID_VALUE;
	}
	if (envnum("STUB_CUDA_NOPEER", 0) != 0) {
		return PEER_ACCESS_UNSUPPORTED;
	}
	pthread_mutex_lock(&mu);
	int already = current->peer[peer->dev];
	current->peer[peer->dev] = 1;
	pthread_mutex_unlock(&mu);
	if (already) {
		// Peer access lives as long as the primary context: another driver
		// in this process may have enabled it.
		logf_("cuCtxEnablePeerAccess dev=%d peer=%d already", current->dev, peer->dev);
		return PEER_ACCESS_ALREADY_ENABLED;
	}
	logf_("cuCtxEnablePeerAccess dev=%d peer=%d", current->dev, peer->dev);
	return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	ENTER("cuMemAlloc_v2");
	NEED_CTX();
	void *q;
	CUresult r = add_alloc(n, 0, &q);
	if (r == SUCCESS) {
		*p = (CUdeviceptr)(uintptr_t)q;
		logf_("cuMemAlloc_v2 ptr=%p bytes=%zu dev=%d", q, n, current->dev);
	}
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	ENTER("cuMemFree_v2");
	NEED_CTX();
	CUresult r = del_alloc((void *)(uintptr_t)p, 0);
	if (r == SUCCESS) {
		logf_("cuMemFree_v2 ptr=%p", (void *)(uintptr_t)p);
	}
	return r;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
	ENTER("cuMemHostAlloc");
	NEED_CTX();
	(void)flags;
	CUresult r = add_alloc(n, 1, p);
	if (r == SUCCESS) {
		logf_("cuMemHostAlloc ptr=%p bytes=%zu", *p, n);
	}
	return r;
}

CUresult cuMemFreeHost(void *p) {
	ENTER("cuMemFreeHost");
	NEED_CTX();
	CUresult r = del_alloc(p, 1);
	if (r == SUCCESS) {
		logf_("cuMemFreeHost ptr=%p", p);
	}
	return r;
}

static struct alloc *dev_range(CUdeviceptr p, size_t n) {
	pthread_mutex_lock(&mu);
	struct alloc *a = find((void *)(uintptr_t)p, n, 0);
	pthread_mutex_unlock(&mu);
	return a;
}

static int pinned(const void *p, size_t n) {
	pthread_mutex_lock(&mu);
	int ok = find(p, n, 1) != NULL;
	pthread_mutex_unlock(&mu);
	return ok;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	ENTER("cuMemcpyHtoD_v2");
	NEED_CTX();
	if (dev_range(dst, n) == NULL || src == NULL) {
		return INVALID_VALUE;
	}
	memcpy((void *)(uintptr_t)dst, src, n);
	logf_("cuMemcpyHtoD_v2 bytes=%zu pinned=%d", n, pinned(src, n));
	return SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	ENTER("cuMemcpyDtoH_v2");
	NEED_CTX();
	if (dev_range(src, n) == NULL || dst == NULL) {
		return INVALID_VALUE;
	}
	memcpy(dst, (void *)(uintptr_t)src, n);
	logf_("cuMemcpyDtoH_v2 bytes=%zu pinned=%d", n, pinned(dst, n));
	return SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	ENTER("cuMemcpyDtoD_v2");
	NEED_CTX();
	if (dev_range(dst, n) == NULL || dev_range(src, n) == NULL) {
		return INVALID_VALUE;
	}
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
	logf_("cuMemcpyDtoD_v2 bytes=%zu", n);
	return SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
	ENTER("cuMemcpyPeer");
	NEED_CTX();
	struct alloc *d = dev_range(dst, n), *s = dev_range(src, n);
	if (d == NULL || s == NULL || d->ctx != dctx || s->ctx != sctx) {
		return INVALID_VALUE;
	}
	memcpy((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
	pthread_mutex_lock(&mu);
	int direct = sctx->peer[dctx->dev] && envnum("STUB_CUDA_NOPEER", 0) == 0;
	pthread_mutex_unlock(&mu);
	logf_("cuMemcpyPeer bytes=%zu from=%d to=%d direct=%d", n, sctx->dev, dctx->dev, direct);
	return SUCCESS;
}

CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned int v, size_t n) {
	ENTER("cuMemsetD32_v2");
	NEED_CTX();
	if (dev_range(p, n * 4) == NULL) {
		return INVALID_VALUE;
	}
	uint32_t *w = (uint32_t *)(uintptr_t)p;
	for (size_t i = 0; i < n; i++) {
		w[i] = v;
	}
	return SUCCESS;
}

// entry_params returns the comma-separated .param types of .entry name in
// ptx ("" when there is no such entry); out holds at most size bytes.
static int entry_params(const char *ptx, const char *name, char *out, size_t size) {
	char key[64];
	snprintf(key, sizeof key, ".entry %s(", name);
	const char *s = strstr(ptx, key);
	if (s == NULL) {
		return 0;
	}
	s += strlen(key);
	const char *end = strchr(s, ')');
	if (end == NULL) {
		return 0;
	}
	out[0] = 0;
	for (const char *p = strstr(s, ".param"); p != NULL && p < end; p = strstr(p + 1, ".param")) {
		const char *t = p + strlen(".param");
		while (*t == ' ' || *t == '\t') {
			t++;
		}
		if (*t != '.') {
			return 0;
		}
		t++;
		size_t len = strcspn(t, " \t");
		if (strlen(out) + len + 2 > size) {
			return 0;
		}
		if (out[0]) {
			strcat(out, ",");
		}
		strncat(out, t, len);
	}
	return 1;
}

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, int *opts, void **vals) {
	ENTER("cuModuleLoadDataEx");
	NEED_CTX();
	const char *ptx = image;
	char *log = NULL;
	size_t logsize = 0;
	for (unsigned int i = 0; i < n; i++) {
		if (opts[i] == 5) {
			log = vals[i];
		} else if (opts[i] == 6) {
			logsize = (size_t)vals[i];
		}
	}
	struct stub_mod mod = {1, current, {0, 0, 0}};
	const char *why = NULL;
	char got[128];
	if (strstr(ptx, ".version 7.0") == NULL || strstr(ptx, ".target sm_60") == NULL || strstr(ptx, ".address_size 64") == NULL) {
		why = "stub: want .version 7.0, .target sm_60, .address_size 64";
	}
	for (int k = 0; k < 3 && why == NULL; k++) {
		if (!entry_params(ptx, kernel_names[k], got, sizeof got)) {
			why = "stub: a kernel is missing";
		} else if (strcmp(got, kernel_params[k]) != 0) {
			why = "stub: a kernel's parameters differ from its launch";
		} else {
			mod.has[k] = 1;
		}
	}
	if (why != NULL) {
		if (log != NULL && logsize > 0) {
			snprintf(log, logsize, "%s", why);
		}
		return INVALID_PTX;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXMOD; i++) {
		if (!mods[i].used) {
			mods[i] = mod;
			*m = &mods[i];
			pthread_mutex_unlock(&mu);
			logf_("cuModuleLoadDataEx mod=%p dev=%d", (void *)*m, current->dev);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return 2;
}

CUresult cuModuleUnload(CUmodule m) {
	ENTER("cuModuleUnload");
	NEED_INIT();
	pthread_mutex_lock(&mu);
	if (m == NULL || m < &mods[0] || m >= &mods[MAXMOD] || !m->used) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	m->used = 0;
	pthread_mutex_unlock(&mu);
	logf_("cuModuleUnload mod=%p", (void *)m);
	return SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
	ENTER("cuModuleGetFunction");
	NEED_CTX();
	pthread_mutex_lock(&mu);
	if (m == NULL || m < &mods[0] || m >= &mods[MAXMOD] || !m->used) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	for (int k = 0; k < 3; k++) {
		if (m->has[k] && strcmp(name, kernel_names[k]) == 0) {
			struct stub_func *fn = &funcs[m - mods][k];
			fn->mod = m;
			fn->kind = k;
			*f = fn;
			pthread_mutex_unlock(&mu);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return NOT_FOUND;
}

// The kernels, as C over host memory. fma_loop does the same arithmetic
// as the PTX (the chains' sums are exact for the calibration's a = b = 1).
static CUresult run_fma(unsigned long long threads, void **params) {
	CUdeviceptr out = *(CUdeviceptr *)params[0];
	unsigned int iters = *(unsigned int *)params[1];
	float a = *(float *)params[2], b = *(float *)params[3];
	if (dev_range(out, threads * 4) == NULL) {
		return ILLEGAL_ADDRESS;
	}
	float *o = (float *)(uintptr_t)out;
	for (unsigned long long t = 0; t < threads; t++) {
		float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
		for (unsigned int i = 0; i < iters; i++) {
			for (int r = 0; r < 2; r++) {
				for (int c = 0; c < 8; c++) {
					x[c] = x[c] * a + b;
				}
			}
		}
		float s = x[0];
		for (int c = 1; c < 8; c++) {
			s += x[c];
		}
		o[t] = s + (envnum("STUB_CUDA_BADFMA", 0) != 0);
	}
	return SUCCESS;
}

static uint32_t word(unsigned long long i, uint32_t seed) {
	return (uint32_t)(i ^ (i >> 32)) * 0x9E3779B1u ^ seed;
}

static CUresult run_pattern(int check, void **params) {
	CUdeviceptr buf = *(CUdeviceptr *)params[0];
	unsigned long long n = *(unsigned long long *)params[1];
	uint32_t seed = *(unsigned int *)params[2];
	if (dev_range(buf, n * 4) == NULL) {
		return ILLEGAL_ADDRESS;
	}
	uint32_t *w = (uint32_t *)(uintptr_t)buf;
	if (!check) {
		for (unsigned long long i = 0; i < n; i++) {
			w[i] = word(i, seed);
		}
		long stuck = envnum("STUB_CUDA_STUCK", 0);
		for (long k = 0; k < stuck && (unsigned long long)k < n; k++) {
			w[(unsigned long long)k * n / stuck] &= ~1u;
		}
		return SUCCESS;
	}
	CUdeviceptr count = *(CUdeviceptr *)params[3];
	if (dev_range(count, 8) == NULL) {
		return ILLEGAL_ADDRESS;
	}
	unsigned long long bad = 0;
	for (unsigned long long i = 0; i < n; i++) {
		bad += w[i] != word(i, seed);
	}
	*(unsigned long long *)(uintptr_t)count += bad;
	return SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm, CUstream s,
		void **params, void **extra) {
	ENTER("cuLaunchKernel");
	NEED_CTX();
	pthread_mutex_lock(&mu);
	int live = f != NULL && f->mod != NULL && f->mod->used;
	int mine = live && f->mod->ctx == current;
	int kind = live ? f->kind : 0;
	pthread_mutex_unlock(&mu);
	if (!live) {
		return INVALID_HANDLE;
	}
	if (!mine) {
		return INVALID_CONTEXT;
	}
	if (gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1 || shm != 0 || s != NULL ||
			params == NULL || extra != NULL) {
		return INVALID_VALUE;
	}
	if (kind != 0) {
		logf_("cuLaunchKernel %s grid=%u block=%u", kernel_names[kind], gx, bx);
		return run_pattern(kind == 2, params);
	}
	// The kernel runs on the calling thread: its start and end are when
	// this device computed, for tests of devices computing at once.
	double start = now();
	CUresult r = run_fma((unsigned long long)gx * bx, params);
	logf_("cuLaunchKernel %s grid=%u block=%u dev=%d start=%.6f end=%.6f", kernel_names[kind], gx, bx, current->dev, start, now());
	return r;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
	ENTER("cuEventCreate");
	NEED_CTX();
	if (flags & ~3u) {
		return INVALID_VALUE;
	}
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAXEVENT; i++) {
		if (!events[i].used) {
			events[i] = (struct stub_event){1, current, 0, 0};
			*e = &events[i];
			pthread_mutex_unlock(&mu);
			logf_("cuEventCreate ev=%p dev=%d flags=%u", (void *)*e, current->dev, flags);
			return SUCCESS;
		}
	}
	pthread_mutex_unlock(&mu);
	return 2;
}

static int live_event_locked(CUevent e) {
	return e != NULL && e >= &events[0] && e < &events[MAXEVENT] && e->used;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
	ENTER("cuEventRecord");
	NEED_CTX();
	pthread_mutex_lock(&mu);
	if (!live_event_locked(e) || s != NULL || e->ctx != current) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	e->recorded = 1;
	e->t = now();
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) {
	ENTER("cuEventSynchronize");
	NEED_INIT();
	pthread_mutex_lock(&mu);
	int ok = live_event_locked(e);
	pthread_mutex_unlock(&mu);
	return ok ? SUCCESS : INVALID_HANDLE;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
	ENTER("cuEventElapsedTime");
	NEED_INIT();
	pthread_mutex_lock(&mu);
	if (!live_event_locked(start) || !live_event_locked(end) || !start->recorded || !end->recorded || start->ctx != end->ctx) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	*ms = (float)((end->t - start->t) * 1e3);
	pthread_mutex_unlock(&mu);
	return SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) {
	ENTER("cuEventDestroy_v2");
	NEED_INIT();
	pthread_mutex_lock(&mu);
	if (!live_event_locked(e)) {
		pthread_mutex_unlock(&mu);
		return INVALID_HANDLE;
	}
	e->used = 0;
	pthread_mutex_unlock(&mu);
	logf_("cuEventDestroy_v2 ev=%p", (void *)e);
	return SUCCESS;
}

static const struct {
	CUresult code;
	const char *name, *desc;
} names[] = {
	{SUCCESS, "CUDA_SUCCESS", "no error"},
	{INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	{INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
};

CUresult cuGetErrorName(CUresult r, const char **s) {
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].code == r) {
			*s = names[i].name;
			return SUCCESS;
		}
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (names[i].code == r) {
			*s = names[i].desc;
			return SUCCESS;
		}
	}
	*s = NULL;
	return INVALID_VALUE;
}
