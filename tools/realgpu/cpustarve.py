# Data loader starved by CPU work: one worker does heavy per-sample CPU transforms.
import os, time, torch
secs = float(os.environ.get("SECS", "30"))
class DS(torch.utils.data.Dataset):
    def __len__(self): return 10**9
    def __getitem__(self, i):
        x = torch.randn(256, 256)
        for _ in range(6): x = torch.tanh(x @ x.T / 256)   # CPU-bound "decode"
        return x.flatten()[:1024], torch.randint(0, 10, ())
torch.set_num_threads(1)
dl = torch.utils.data.DataLoader(DS(), batch_size=64, num_workers=1)
m = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
t0 = time.time(); n = 0
for x, y in dl:
    x, y = x.cuda(), y.cuda()
    loss = torch.nn.functional.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step(); n += 1
    if time.time() - t0 > secs: break
torch.cuda.synchronize(); print("cpustarve batches", n, "in", round(time.time()-t0,1), "s")
