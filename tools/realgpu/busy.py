# A healthy, GPU-bound loop: bf16 matmuls for SECS seconds.
import os, time, torch
secs = float(os.environ.get("SECS", "30"))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); n += 20
print("busy matmuls", n, "in", round(time.time() - t0, 1), "s")
