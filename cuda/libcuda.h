// The CUDA driver API as gpuprobe calls it: the few cuda.h types it needs,
// declared here so that no CUDA header is needed at build time, and the
// wrappers libcuda.c defines (cgo cannot call through a function pointer).
#ifndef GPUPROBE_LIBCUDA_H
#define GPUPROBE_LIBCUDA_H

#include <stddef.h>


typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;

// gp_api holds the entry points of one loaded libcuda.so.1.
typedef struct {
	void *lib;
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetName)(char *, int, CUdevice);
	CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice);
	CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
	CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuCtxEnablePeerAccess)(CUcontext, unsigned int);
	CUresult (*cuDeviceCanAccessPeer)(int *, CUdevice, CUdevice);
	CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree_v2)(CUdeviceptr);
	CUresult (*cuMemHostAlloc)(void **, size_t, unsigned int);
	CUresult (*cuMemFreeHost)(void *);
	CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
	CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
	CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*cuMemcpyPeer)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
	CUresult (*cuMemsetD32_v2)(CUdeviceptr, unsigned int, size_t);
	CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int, int *, void **);
	CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*cuModuleUnload)(CUmodule);
	CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
		unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
	CUresult (*cuEventCreate)(CUevent *, unsigned int);
	CUresult (*cuEventRecord)(CUevent, CUstream);
	CUresult (*cuEventSynchronize)(CUevent);
	CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*cuEventDestroy_v2)(CUevent);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuGetErrorString)(CUresult, const char **);
} gp_api;


gp_api * gp_open(const char *lib, char **err, const char **missing);
const char * gp_path(gp_api *a);
CUresult gp_cuInit(gp_api *a, unsigned int f);
CUresult gp_cuDriverGetVersion(gp_api *a, int *v);
CUresult gp_cuDeviceGetCount(gp_api *a, int *n);
CUresult gp_cuDeviceGet(gp_api *a, CUdevice *d, int i);
CUresult gp_cuDeviceGetName(gp_api *a, char *s, int n, CUdevice d);
CUresult gp_cuDeviceGetPCIBusId(gp_api *a, char *s, int n, CUdevice d);
CUresult gp_cuDeviceTotalMem(gp_api *a, size_t *b, CUdevice d);
CUresult gp_cuDeviceGetAttribute(gp_api *a, int *v, int attr, CUdevice d);
CUresult gp_cuDevicePrimaryCtxRetain(gp_api *a, CUcontext *c, CUdevice d);
CUresult gp_cuDevicePrimaryCtxRelease(gp_api *a, CUdevice d);
CUresult gp_cuCtxSetCurrent(gp_api *a, CUcontext c);
CUresult gp_cuCtxSynchronize(gp_api *a);
CUresult gp_cuCtxEnablePeerAccess(gp_api *a, CUcontext peer);
CUresult gp_cuDeviceCanAccessPeer(gp_api *a, int *can, CUdevice d, CUdevice peer);
CUresult gp_cuMemAlloc(gp_api *a, CUdeviceptr *p, size_t n);
CUresult gp_cuMemFree(gp_api *a, CUdeviceptr p);
CUresult gp_cuMemHostAlloc(gp_api *a, void **p, size_t n);
CUresult gp_cuMemFreeHost(gp_api *a, void *p);
CUresult gp_cuMemcpyHtoD(gp_api *a, CUdeviceptr dst, void *src, size_t n);
CUresult gp_cuMemcpyDtoH(gp_api *a, void *dst, CUdeviceptr src, size_t n);
CUresult gp_cuMemcpyDtoD(gp_api *a, CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult gp_cuMemcpyPeer(gp_api *a, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n);
CUresult gp_cuMemsetD32(gp_api *a, CUdeviceptr p, unsigned int v, size_t n);
CUresult gp_cuModuleGetFunction(gp_api *a, CUfunction *f, CUmodule m, const char *name);
CUresult gp_cuModuleUnload(gp_api *a, CUmodule m);
CUresult gp_cuEventCreate(gp_api *a, CUevent *e);
CUresult gp_cuEventRecord(gp_api *a, CUevent e);
CUresult gp_cuEventSynchronize(gp_api *a, CUevent e);
CUresult gp_cuEventElapsedTime(gp_api *a, float *ms, CUevent start, CUevent end);
CUresult gp_cuEventDestroy(gp_api *a, CUevent e);
CUresult gp_cuGetErrorName(gp_api *a, CUresult r, const char **s);
CUresult gp_cuGetErrorString(gp_api *a, CUresult r, const char **s);
CUresult gp_module_load(gp_api *a, CUmodule *m, const char *ptx, char *log, unsigned int logsize);
CUresult gp_launch_fma(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr out, unsigned int iters, float mul, float add);
CUresult gp_launch_pattern_write(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr buf, unsigned long long nwords, unsigned int seed);
CUresult gp_launch_pattern_check(gp_api *a, CUfunction f, unsigned int blocks, unsigned int threads,
		CUdeviceptr buf, unsigned long long nwords, unsigned int seed, CUdeviceptr count);

#endif
