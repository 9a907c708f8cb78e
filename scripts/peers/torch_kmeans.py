"""Times torch's k-means iteration (GEMM + argmin + index_add) on the GPU, the peer that
docs/kmeans.md compares `lab bench kmeans` with. Same shape as the bench: N points, D dims,
K clusters, float32, data resident.

    python3 scripts/peers/torch_kmeans.py [N D K ITERS]
"""
import sys

import torch

n, d, k, iters = (int(a) for a in (sys.argv[1:] or ["1000000", "1536", "25", "10"]))
torch.manual_seed(0)
dev = "cuda"
centers = torch.randn(k, d, device=dev) * 10
x = centers[torch.randint(0, k, (n,), device=dev)] + torch.randn(n, d, device=dev)
c = x[torch.randperm(n, device=dev)[:k]].clone()


def step(c):
    # argmin |x - c|^2 = argmin |c|^2 - 2 x.c : one GEMM, then the update.
    dist = (c * c).sum(1)[None, :] - 2.0 * (x @ c.T)
    labels = dist.argmin(1)
    sums = torch.zeros_like(c).index_add_(0, labels, x)
    counts = torch.bincount(labels, minlength=k).clamp_min(1).to(x.dtype)
    return sums / counts[:, None]


torch.backends.cuda.matmul.allow_tf32 = False  # FP32, as the lab's kernels
for _ in range(3):
    c = step(c)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda.synchronize()
start.record()
for _ in range(iters):
    c = step(c)
end.record()
torch.cuda.synchronize()
print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}: N={n} D={d} K={k}: "
      f"{start.elapsed_time(end) / iters:.3f} ms per iteration (GEMM + argmin + index_add, FP32)")
