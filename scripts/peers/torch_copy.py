"""Device-to-device copy bandwidth through torch: the peer figure that
`lab bench copy --device cuda:0` is compared with (bytes read + written)."""
import sys
import torch

sizes = [int(s) for s in sys.argv[1:]] or [1 << 30]
for nbytes in sizes:
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(20):
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    ms = times[len(times) // 2]
    print(f"torch copy_ {nbytes / 2**20:.0f} MiB: median {ms:.4f} ms, {2 * nbytes / ms / 1e6:.1f} GB/s "
          f"({torch.cuda.get_device_name()})")
