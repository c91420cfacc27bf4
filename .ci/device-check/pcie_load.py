# pcie_load.py: the device check's copies where there is torch but no nvcc (CUDA), and its AMD
# copies (torch built for ROCm exposes the same torch.cuda API; HIP_VISIBLE_DEVICES selects GPUs).
#   pcie_load.py SECONDS       copies a pinned 256 MiB buffer host->device and device->host on
#                              device 0 for SECONDS and prints "h2d_bytes d2h_bytes seconds";
#   pcie_load.py SECONDS p2p   copies a 256 MiB buffer device 0 -> device 1 for SECONDS and prints
#                              "bytes seconds".
# On stderr it names the device(s) it copied on, with their PCI address where torch gives one.
import sys
import time

import torch


def where(i):
    p = torch.cuda.get_device_properties(i)
    bus = ""
    if hasattr(p, "pci_bus_id"):
        bus = " pci_bus_id=%04x:%02x:%02x.0" % (getattr(p, "pci_domain_id", 0), p.pci_bus_id, getattr(p, "pci_device_id", 0))
    return "device %d: %s%s" % (i, p.name, bus)


secs = float(sys.argv[1])
p2p = len(sys.argv) > 2 and sys.argv[2] == "p2p"
n = 256 << 20
if p2p:
    src = torch.empty(n, dtype=torch.uint8, device="cuda:0")
    dst = torch.empty(n, dtype=torch.uint8, device="cuda:1")
    sys.stderr.write("%s\n%s\n" % (where(0), where(1)))
    moved = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        dst.copy_(src)
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        moved += n
    print(moved, "%.3f" % (time.monotonic() - t0))
    sys.exit(0)
h = torch.empty(n, dtype=torch.uint8).pin_memory()
d = torch.empty(n, dtype=torch.uint8, device="cuda")
sys.stderr.write("%s\n" % where(0))
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
