# One process, one rank: init_process_group("nccl") and one all-reduce.
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29511")
rank = int(os.environ.get("RANK", "0")); world = int(os.environ.get("WORLD_SIZE", "1"))
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=rank, world_size=world)
x = torch.ones(1 << 20, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
print("rank", rank, "allreduce ok", x[0].item(), "torch", torch.__version__, "nccl", torch.cuda.nccl.version())
dist.destroy_process_group()
