package topology

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// peerMemLoaded reports whether a peer-memory client for GPU memory is loaded: nvidia-peermem
// (shipped with the NVIDIA driver since R470) or the older nv_peer_mem from nv_peer_memory.
// Loaded modules appear under /sys/module.
func peerMemLoaded(sys string) State {
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if _, err := os.Stat(filepath.Join(sys, "module", m)); err == nil {
			return Yes
		}
	}
	return No
}

// dmabufUsable reports whether the DMA-BUF path can be used: RDMA drivers import dma-buf memory
// regions since Linux 5.12 (ib_umem_dmabuf), and the NVIDIA driver exports GPU memory as dma-buf
// with its open kernel module (NVIDIA GPU Operator documentation, "GPUDirect RDMA and GPUDirect
// Storage"). No without the NVIDIA driver, Unknown when /proc does not tell.
func dmabufUsable(root, sys string) State {
	if _, err := os.Stat(filepath.Join(sys, "module", "nvidia")); err != nil {
		return No
	}
	rel, err := sysfs.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease"), 4096)
	if err != nil {
		return Unknown
	}
	if !kernelAtLeast(strings.TrimSpace(string(rel)), 5, 12) {
		return No
	}
	ver, err := sysfs.ReadFile(filepath.Join(root, "proc", "driver", "nvidia", "version"), 4096)
	if err != nil {
		return Unknown
	}
	return stateOf(strings.Contains(string(ver), "Open Kernel Module"))
}

// amdgpuDMABufUsable reports whether amdgpu can export VRAM to an RDMA device over dma-buf:
// amdgpu_dma_buf.c amdgpu_dma_buf_attach keeps attach->peer2peer unless the importer is neither
// reachable over XGMI nor at a P2P distance (pci_p2pdma_distance < 0, which the pair's path and
// ACS checks judge), and RDMA drivers import dma-buf memory regions since Linux 5.12
// (ib_umem_dmabuf_get, drivers/infiniband/core/umem_dmabuf.c). No without amdgpu loaded, Unknown
// when /proc does not give the kernel release.
func amdgpuDMABufUsable(root, sys string) State {
	if _, err := os.Stat(filepath.Join(sys, "module", "amdgpu")); err != nil {
		return No
	}
	rel, err := sysfs.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease"), 4096)
	if err != nil {
		return Unknown
	}
	return stateOf(kernelAtLeast(strings.TrimSpace(string(rel)), 5, 12))
}

// kernelAtLeast compares an osrelease string ("6.8.0-45-generic") with major.minor.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
