# pcie_load.py: the device check's PCIe traffic on CUDA device 0 where there is torch but no nvcc.
# Copies a pinned 256 MiB buffer host->device and device->host for argv[1] seconds and prints
# "h2d_bytes d2h_bytes seconds".
import sys
import time

import torch

secs = float(sys.argv[1])
n = 256 << 20
h = torch.empty(n, dtype=torch.uint8).pin_memory()
d = torch.empty(n, dtype=torch.uint8, device="cuda")
up = down = 0
t0 = time.monotonic()
while time.monotonic() - t0 < secs:
    d.copy_(h)
    torch.cuda.synchronize()
    up += n
    h.copy_(d)
    torch.cuda.synchronize()
    down += n
print(up, down, "%.3f" % (time.monotonic() - t0))
