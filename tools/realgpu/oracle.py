# PyTorch as the oracle for gpuprobe verify: the same measurements through
# PyTorch's own allocator and copies (CUDA events), printed as JSON lines.
import json, time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

def per_iter(f, iters, warm=2):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        f()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 1000 / iters

def out(**kw):
    print(json.dumps(kw), flush=True)

p = torch.cuda.get_device_properties(0)
out(what="device", name=p.name, sms=p.multi_processor_count, mem=p.total_memory,
    torch=torch.__version__, cuda=torch.version.cuda, nccl=".".join(map(str, torch.cuda.nccl.version())))
for size in (256 << 20, 1 << 30):
    h = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    d = torch.empty(size, dtype=torch.uint8, device="cuda")
    out(what="h2d_pinned", bytes=size, gbs=size / per_iter(lambda: d.copy_(h, non_blocking=True), 10) / 1e9)
    out(what="d2h_pinned", bytes=size, gbs=size / per_iter(lambda: h.copy_(d, non_blocking=True), 10) / 1e9)
    del h, d
for size in (512 << 20, 2 << 30, 4 << 30):
    a = torch.empty(size, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
    s = per_iter(lambda: b.copy_(a), 10)
    out(what="d2d", bytes=size, copied_gbs=size / s / 1e9, read_plus_write_gbs=2 * size / s / 1e9)
    del a, b
torch.cuda.empty_cache()
for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16"), (torch.float32, "fp32_no_tf32")):
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=dt); b = torch.randn_like(a)
    s = per_iter(lambda: a @ b, 20 if dt != torch.float32 else 5)
    out(what="matmul", dtype=name, n=n, tflops=2 * n ** 3 / s / 1e12)
# an FMA-bound elementwise loop (fp32 CUDA cores): x = x*a + b, 64 times per launch
x = torch.rand(1 << 24, device="cuda"); a = torch.full_like(x, 0.999); c = torch.full_like(x, 0.001)
def fma():
    global x
    for _ in range(64):
        x = torch.addcmul(c, x, a)
s = per_iter(fma, 5)
out(what="addcmul_fp32", note="memory-bound: 3 reads + 1 write per FMA", gflops=2 * 64 * x.numel() / s / 1e9,
    gbs=16 * 64 * x.numel() / s / 1e9)
