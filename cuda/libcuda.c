#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "libcuda.h"

// gp_open loads lib (a bare soname searches the system loader's path) and
// resolves every entry point. On failure it returns NULL and sets *err to
// dlerror's text, or *missing to the first entry point not found.
gp_api *gp_open(const char *lib, char **err, const char **missing) {
	*err = NULL;
	*missing = NULL;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		*err = strdup(e ? e : "dlopen failed");
		return NULL;
	}
	gp_api *a = calloc(1, sizeof *a);
	if (a == NULL) {
		*err = strdup("out of memory");
		return NULL;
	}
	a->lib = h;
#define GP_SYM(name) \
	do { \
		*(void **)(&a->name) = dlsym(h, #name); \
		if (a->name == NULL) { *missing = #name; free(a); return NULL; } \
	} while (0)
	GP_SYM(cuInit);
	GP_SYM(cuDriverGetVersion);
	GP_SYM(cuDeviceGetCount);
	GP_SYM(cuDeviceGet);
	GP_SYM(cuDeviceGetName);
	GP_SYM(cuDeviceGetPCIBusId);
	GP_SYM(cuDeviceTotalMem_v2);
	GP_SYM(cuDeviceGetAttribute);
	GP_SYM(cuDevicePrimaryCtxRetain);
	GP_SYM(cuDevicePrimaryCtxRelease_v2);
	GP_SYM(cuCtxSetCurrent);
	GP_SYM(cuCtxSynchronize);
	GP_SYM(cuCtxEnablePeerAccess);
	GP_SYM(cuDeviceCanAccessPeer);
	GP_SYM(cuMemAlloc_v2);
	GP_SYM(cuMemFree_v2);
	GP_SYM(cuMemHostAlloc);
	GP_SYM(cuMemFreeHost);
	GP_SYM(cuMemcpyHtoD_v2);
	GP_SYM(cuMemcpyDtoH_v2);
	GP_SYM(cuMemcpyDtoD_v2);
	GP_SYM(cuMemcpyPeer);
	GP_SYM(cuMemsetD32_v2);
	GP_SYM(cuModuleLoadDataEx);
	GP_SYM(cuModuleGetFunction);
	GP_SYM(cuModuleUnload);
	GP_SYM(cuLaunchKernel);
	GP_SYM(cuEventCreate);
	GP_SYM(cuEventRecord);
	GP_SYM(cuEventSynchronize);
	GP_SYM(cuEventElapsedTime);
	GP_SYM(cuEventDestroy_v2);
	GP_SYM(cuGetErrorName);
	GP_SYM(cuGetErrorString);
#undef GP_SYM
	return a;
}

// gp_path is the file the loader opened for the library (its link map
// name), or "" when it cannot say.
const char *gp_path(gp_api *a) {
	struct link_map *lm = NULL;
	if (dlinfo(a->lib, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL || lm->l_name == NULL) {
		return "";
	}
	return lm->l_name;
}

// One wrapper per entry point: cgo cannot call through a function pointer.
CUresult gp_cuInit(gp_api *a, unsigned int f) { return a->cuInit(f); }
CUresult gp_cuDriverGetVersion(gp_api *a, int *v) { return a->cuDriverGetVersion(v); }
CUresult gp_cuDeviceGetCount(gp_api *a, int *n) { return a->cuDeviceGetCount(n); }
CUresult gp_cuDeviceGet(gp_api *a, CUdevice *d, int i) { return a->cuDeviceGet(d, i); }
CUresult gp_cuDeviceGetName(gp_api *a, char *s, int n, CUdevice d) { return a->cuDeviceGetName(s, n, d); }
CUresult gp_cuDeviceGetPCIBusId(gp_api *a, char *s, int n, CUdevice d) { return a->cuDeviceGetPCIBusId(s, n, d); }
CUresult gp_cuDeviceTotalMem(gp_api *a, size_t *b, CUdevice d) { return a->cuDeviceTotalMem_v2(b, d); }
CUresult gp_cuDeviceGetAttribute(gp_api *a, int *v, int attr, CUdevice d) { return a->cuDeviceGetAttribute(v, attr, d); }
CUresult gp_cuDevicePrimaryCtxRetain(gp_api *a, CUcontext *c, CUdevice d) { return a->cuDevicePrimaryCtxRetain(c, d); }
CUresult gp_cuDevicePrimaryCtxRelease(gp_api *a, CUdevice d) { return a->cuDevicePrimaryCtxRelease_v2(d); }
CUresult gp_cuCtxSetCurrent(gp_api *a, CUcontext c) { return a->cuCtxSetCurrent(c); }
CUresult gp_cuCtxSynchronize(gp_api *a) { return a->cuCtxSynchronize(); }
CUresult gp_cuCtxEnablePeerAccess(gp_api *a, CUcontext peer) { return a->cuCtxEnablePeerAccess(peer, 0); }
CUresult gp_cuDeviceCanAccessPeer(gp_api *a, int *can, CUdevice d, CUdevice peer) { return a->cuDeviceCanAccessPeer(can, d, peer); }
CUresult gp_cuMemAlloc(gp_api *a, CUdeviceptr *p, size_t n) { return a->cuMemAlloc_v2(p, n); }
CUresult gp_cuMemFree(gp_api *a, CUdeviceptr p) { return a->cuMemFree_v2(p); }
CUresult gp_cuMemHostAlloc(gp_api *a, void **p, size_t n) { return a->cuMemHostAlloc(p, n, 0); }
CUresult gp_cuMemFreeHost(gp_api *a, void *p) { return a->cuMemFreeHost(p); }
CUresult gp_cuMemcpyHtoD(gp_api *a, CUdeviceptr dst, void *src, size_t n) { return a->cuMemcpyHtoD_v2(dst, src, n); }
CUresult gp_cuMemcpyDtoH(gp_api *a, void *dst, CUdeviceptr src, size_t n) { return a->cuMemcpyDtoH_v2(dst, src, n); }
CUresult gp_cuMemcpyDtoD(gp_api *a, CUdeviceptr dst, CUdeviceptr src, size_t n) { return a->cuMemcpyDtoD_v2(dst, src, n); }
CUresult gp_cuMemcpyPeer(gp_api *a, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
	return a->cuMemcpyPeer(dst, dctx, src, sctx, n);
}
CUresult gp_cuMemsetD32(gp_api *a, CUdeviceptr p, unsigned int v, size_t n) { return a->cuMemsetD32_v2(p, v, n); }
CUresult gp_cuModuleGetFunction(gp_api *a, CUfunction *f, CUmodule m, const char *name) { return a->cuModuleGetFunction(f, m, name); }
CUresult gp_cuModuleUnload(gp_api *a, CUmodule m) { return a->cuModuleUnload(m); }
// CU_EVENT_BLOCKING_SYNC (1): cuEventSynchronize sleeps instead of spinning a
// CPU for the length of a compute load; the times are the GPU's either way.
CUresult gp_cuEventCreate(gp_api *a, CUevent *e) { return a->cuEventCreate(e, 1); }
CUresult gp_cuEventRecord(gp_api *a, CUevent e) { return a->cuEventRecord(e, NULL); }
CUresult gp_cuEventSynchronize(gp_api *a, CUevent e) { return a->cuEventSynchronize(e); }
CUresult gp_cuEventElapsedTime(gp_api *a, float *ms, CUevent start, CUevent end) { return a->cuEventElapsedTime(ms, start, end); }
CUresult gp_cuEventDestroy(gp_api *a, CUevent e) { return a->cuEventDestroy_v2(e); }
CUresult gp_cuGetErrorName(gp_api *a, CUresult r, const char **s) { return a->cuGetErrorName(r, s); }
CUresult gp_cuGetErrorString(gp_api *a, CUresult r, const char **s) { return a->cuGetErrorString(r, s); }

// gp_module_load JIT-compiles PTX text, keeping the JIT's error log
// (CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6).
CUresult gp_module_load(gp_api *a, CUmodule *m, const char *ptx, char *log, unsigned int logsize) {
	int opts[2] = {5, 6};
	void *vals[2] = {log, (void *)(size_t)logsize};
	log[0] = 0;
	return a->cuModuleLoadDataEx(m, ptx, 2, opts, vals);
}

// The launches build the kernel's parameter array on the C side, each
// element pointing at a value of exactly the type the PTX .param declares.
CUresult gp_launch_fma(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr out, unsigned int iters, float mul, float add) {
	void *params[] = {&out, &iters, &mul, &add};
	return a->cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, NULL, params, NULL);
}
CUresult gp_launch_pattern_write(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr buf, unsigned long long nwords, unsigned int seed) {
	void *params[] = {&buf, &nwords, &seed};
	return a->cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, NULL, params, NULL);
}
CUresult gp_launch_pattern_check(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr buf, unsigned long long nwords, unsigned int seed, CUdeviceptr count) {
	void *params[] = {&buf, &nwords, &seed, &count};
	return a->cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, NULL, params, NULL);
}
