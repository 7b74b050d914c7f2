# RSS a process pays for NVML and libcuda alone (no Go): RssAnon/RssFile before and after each step.
import ctypes
def rss():
    d = {}
    for l in open("/proc/self/status"):
        k = l.split(":")[0]
        if k in ("RssAnon", "RssFile"): d[k] = int(l.split()[1])
    return d
print("start", rss())
m = ctypes.CDLL("libnvidia-ml.so.1"); print("dlopen nvml", rss())
print("nvmlInit_v2 rc", m.nvmlInit_v2(), rss())
h = ctypes.c_void_p(); print("handle rc", m.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)))
class Mem(ctypes.Structure): _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
mm = Mem(); m.nvmlDeviceGetMemoryInfo(h, ctypes.byref(mm)); print("after device query", rss())
v = ctypes.c_int(); print("cudaDriverVersion rc", m.nvmlSystemGetCudaDriverVersion(ctypes.byref(v)), v.value, rss())
