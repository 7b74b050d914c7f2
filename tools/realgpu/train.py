# A small training loop; STARVE=1 makes the data loader the bottleneck.
import os, time, torch
starve = os.environ.get("STARVE") == "1"
secs = float(os.environ.get("SECS", "25"))
class DS(torch.utils.data.Dataset):
    def __len__(self): return 10**9
    def __getitem__(self, i):
        if starve: time.sleep(0.02)
        return torch.randn(1024), torch.randint(0, 10, ())
dl = torch.utils.data.DataLoader(DS(), batch_size=256, num_workers=1 if starve else 4)
m = torch.nn.Sequential(torch.nn.Linear(1024, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 10)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
t0 = time.time(); n = 0
for x, y in dl:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    for _ in range(1 if starve else 8):
        loss = torch.nn.functional.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
    n += 1
    if time.time() - t0 > secs: break
torch.cuda.synchronize(); print("starve" if starve else "healthy", "batches", n, "in", round(time.time()-t0,1), "s")
