# Where nvmlInit's resident memory lives, and whether NVML_INIT_FLAG_NO_ATTACH (2) or shutdown changes it.
import ctypes, sys, re
def rss():
    d = {}
    for l in open("/proc/self/status"):
        k = l.split(":")[0]
        if k in ("RssAnon", "RssFile"): d[k] = int(l.split()[1])
    return d
def top():
    out, name = {}, None
    for l in open("/proc/self/smaps"):
        if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', l):
            f = l.split(); name = f[5] if len(f) > 5 else "[anon]"
        elif l.startswith("Rss:"): out[name] = out.get(name, 0) + int(l.split()[1])
    return sorted(((v, k) for k, v in out.items()), reverse=True)[:6]
flags = int(sys.argv[1])
m = ctypes.CDLL("libnvidia-ml.so.1"); print("flags", flags, "before", rss(), top())
print("init rc", m.nvmlInitWithFlags(flags), rss()); print(top())
h = ctypes.c_void_p(); print("handle rc", m.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)))
t = ctypes.c_uint(); print("temp rc", m.nvmlDeviceGetTemperature(h, 0, ctypes.byref(t)), t.value, rss())
print("shutdown rc", m.nvmlShutdown(), rss())
