# A process in one of the states perf.hang tells apart, for SECS seconds:
#   MODE=idle  holds a CUDA context and sleeps (a rank waiting on the host)
#   MODE=spin  a one-thread busy-wait kernel (torch.cuda._sleep): the GPU
#              "utilised" at low power, as a rank spinning in a collective
#   MODE=busy  bf16 matmuls (a rank computing)
#   MODE=nccl  init_process_group("nccl") and all-reduces in a loop (RAS on)
# It writes READY (a path) once the state is reached.
import os, time, torch
mode = os.environ.get("MODE", "idle"); secs = float(os.environ.get("SECS", "20"))
torch.cuda.set_device(0)
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize()
if mode == "nccl":
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29513")
    dist.init_process_group("nccl", rank=0, world_size=1)
    dist.all_reduce(x); torch.cuda.synchronize()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) if mode == "busy" else None
ready = os.environ.get("READY")
if ready:
    open(ready, "w").write(str(os.getpid()))
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    if mode == "spin":
        torch.cuda._sleep(500_000_000); torch.cuda.synchronize()
    elif mode == "busy":
        for _ in range(10): a @ a
        torch.cuda.synchronize()
    elif mode == "nccl":
        dist.all_reduce(x); torch.cuda.synchronize(); time.sleep(0.01)
    else:
        time.sleep(0.2)
    n += 1
print(mode, "iterations", n, "in", round(time.time() - t0, 1), "s", flush=True)
if mode == "nccl":
    dist.destroy_process_group()
