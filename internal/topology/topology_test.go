package topology

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/natorder"
	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/topology/topologytest"
)

// The nodes are topologytest's (kernel sysfs layout, written by testfs.WritePCINode); the NICs
// are handed in as the rnic receiver does: every RDMA device of the node, in natural name order.

func nicsOf(node testfs.PCINode) []NIC {
	var out []NIC
	var walk func(fs []testfs.PCIFunction)
	walk = func(fs []testfs.PCIFunction) {
		for _, f := range fs {
			if f.RDMA != "" {
				out = append(out, NIC{Name: f.RDMA, Address: f.Address})
			}
			walk(f.Children)
		}
	}
	for _, rb := range node.RootBuses {
		walk(rb.RootPorts)
	}
	sort.Slice(out, func(i, j int) bool { return natorder.Compare(out[i].Name, out[j].Name) < 0 })
	return out
}

func resolve(t *testing.T, name string, allPairs bool) *Topology {
	t.Helper()
	node, ok := topologytest.Nodes()[name]
	require.True(t, ok, name)
	root := t.TempDir()
	testfs.WritePCINode(t, root, node)
	topo, err := Resolve(&sysfs.Reader{}, root, filepath.Join(root, "sys"), nicsOf(node), allPairs)
	require.NoError(t, err)
	return topo
}

// pairOf returns the pair of the GPU at gpuAddr and the NIC named nic.
func pairOf(t *testing.T, topo *Topology, gpuAddr, nic string) Pair {
	t.Helper()
	for _, p := range topo.Pairs {
		if p.GPU.Address() == gpuAddr && p.NIC.Name == nic {
			return p
		}
	}
	require.Failf(t, "no pair", "%s-%s", gpuAddr, nic)
	return Pair{}
}

func nearestOf(topo *Topology, gpuAddr string) (Pair, bool) {
	for _, p := range topo.Nearest {
		if p.GPU.Address() == gpuAddr {
			return p, true
		}
	}
	return Pair{}, false
}

func nicByName(topo *Topology, name string) *Device {
	for _, d := range topo.NICs {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// dgxGPU is the address of GPU i of the dgx node (bus 0x13 + 0x20 i).
func dgxGPU(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x13+0x20*i) }

func TestResolveDGX(t *testing.T) {
	topo := resolve(t, "dgx", true)
	require.Len(t, topo.GPUs, 8)
	require.Len(t, topo.NICs, 8)
	assert.Len(t, topo.Pairs, 64, "one pair per GPU-NIC pair")
	for i := range 8 {
		p := pairOf(t, topo, dgxGPU(i), fmt.Sprintf("mlx5_%d", i))
		assert.Equal(t, pci.PathPIX, p.Path)
		assert.Equal(t, Yes, p.Ready)
		assert.Equal(t, ReasonReady, p.Reason)
		assert.Equal(t, pci.ACSNoRedirect, p.ACS)
		n, ok := nearestOf(topo, dgxGPU(i))
		require.True(t, ok)
		assert.Equal(t, fmt.Sprintf("mlx5_%d", i), n.NIC.Name)
		assert.Equal(t, pci.IOMMUPassthrough, p.GPU.IOMMU)
	}
	// Same socket, other host bridge: NODE; other socket: SYS.
	assert.Equal(t, pci.PathNODE, pairOf(t, topo, dgxGPU(0), "mlx5_3").Path)
	far := pairOf(t, topo, dgxGPU(0), "mlx5_4")
	assert.Equal(t, pci.PathSYS, far.Path)
	assert.Equal(t, No, far.Ready)
	assert.Equal(t, Yes, topo.PeerMem)
	assert.Equal(t, Yes, topo.DMABuf)
	assert.Equal(t, No, nicByName(topo, "mlx5_0").LinkDegraded())
	assert.Equal(t, "0000:14:00.0", nicByName(topo, "mlx5_0").Address())
}

// TestResolveGPUsByAddress: display-class functions ahead of the NVIDIA GPU (a BMC VGA, an AMD
// Instinct) do not shift its identity: it is its PCI address. The BMC's VGA is no GPU.
func TestResolveGPUsByAddress(t *testing.T) {
	topo := resolve(t, "mixed", true)
	var addrs []string
	for _, g := range topo.GPUs {
		addrs = append(addrs, g.Address())
	}
	assert.Equal(t, []string{"0000:06:00.0", "0000:13:00.0"}, addrs, "the AMD and the NVIDIA GPU, not the ASPEED VGA")
	p := pairOf(t, topo, "0000:13:00.0", "mlx5_0")
	assert.Equal(t, pci.PathPIX, p.Path)
	assert.Equal(t, Yes, p.Ready)
	assert.Equal(t, pci.PathNODE, pairOf(t, topo, "0000:06:00.0", "mlx5_0").Path)
}

func TestResolveMiscabled(t *testing.T) {
	topo := resolve(t, "miscabled", false)
	n, ok := nearestOf(topo, "0000:13:00.0")
	require.True(t, ok)
	assert.Equal(t, "mlx5_0", n.NIC.Name)
	assert.Equal(t, pci.PathSYS, n.Path)
	assert.Equal(t, No, n.Ready)
	assert.Equal(t, "0000:91:00.0", n.NIC.Address())
}

func TestResolveNoPeermem(t *testing.T) {
	topo := resolve(t, "nopeermem", false)
	assert.Equal(t, No, topo.PeerMem)
	assert.Equal(t, No, topo.DMABuf, "proprietary kernel module")
	p := pairOf(t, topo, "0000:13:00.0", "mlx5_0")
	assert.Equal(t, pci.PathPIX, p.Path)
	assert.Equal(t, No, p.Ready, "no peer memory")
	assert.Equal(t, ReasonNoPeerMemory, p.Reason)
	assert.Equal(t, pci.ACSNoRedirect, p.ACS)
	assert.Equal(t, pci.ACSRedirect, pairOf(t, topo, "0000:33:00.0", "mlx5_1").ACS)
	assert.Equal(t, pci.IOMMUTranslated, nicByName(topo, "mlx5_1").IOMMU)
}

// TestResolveDegradedGPULink: a GPU trained to x8 at 8 GT/s still makes a ready PIX pair:
// degraded bandwidth, not broken GPUDirect. (Its link is the gpu receiver's to report.)
func TestResolveDegradedGPULink(t *testing.T) {
	topo := resolve(t, "x8gen3", false)
	assert.Equal(t, Yes, pairOf(t, topo, "0000:13:00.0", "mlx5_0").Ready)
	assert.Equal(t, No, nicByName(topo, "mlx5_0").LinkDegraded())
	assert.Zero(t, topo.GPUs[0].Link, "GPU links are not read")
}

func TestResolveDegradedNICLink(t *testing.T) {
	topo := resolve(t, "nic-x8", false)
	nic := nicByName(topo, "mlx5_0")
	assert.Equal(t, Yes, nic.LinkDegraded())
	assert.Equal(t, pci.Link{SpeedGTs: 16, MaxSpeedGTs: 32, Width: 8, MaxWidth: 16}, nic.Link)
}

// TestResolveSlotLinkBehindCardSwitch: a BlueField-3 whose function sits behind the card's own
// PCIe switch: the NIC's link (to the card-internal downstream port) is full x16 Gen5, the slot
// link (card upstream port to root port) trained to x8. pcie_bandwidth_available()
// (drivers/pci/pci.c) walks every link to the root: the NIC is degraded. The healthy ConnectX-7
// of the same node, behind a host switch, is not.
func TestResolveSlotLinkBehindCardSwitch(t *testing.T) {
	topo := resolve(t, "bf3-slot-x8", false)
	bf3 := nicByName(topo, "mlx5_1")
	assert.Equal(t, pci.Link{SpeedGTs: 32, MaxSpeedGTs: 32, Width: 16, MaxWidth: 16}, bf3.Link, "the NIC's own link is healthy")
	assert.Equal(t, Yes, bf3.LinkDegraded())
	assert.Equal(t, No, nicByName(topo, "mlx5_0").LinkDegraded())
}

// TestResolveAMDInstinctDMABuf: an MI300X next to a ConnectX-7 with amdgpu and no NVIDIA driver
// (topologytest "mi300x"): amdgpu_dma_buf_attach (amdgpu_dma_buf.c) keeps peer2peer for a
// P2P-reachable importer, so the PIX pair is ready over DMA-BUF, not no_peer_memory.
func TestResolveAMDInstinctDMABuf(t *testing.T) {
	topo := resolve(t, "mi300x", false)
	assert.Equal(t, No, topo.PeerMem)
	assert.Equal(t, Yes, topo.DMABuf)
	p := pairOf(t, topo, "0000:13:00.0", "mlx5_0")
	assert.Equal(t, Yes, p.Ready)
	assert.Equal(t, ReasonReady, p.Reason)
}

// TestResolveHGXIommuPT: an HGX board booted with iommu=pt, whose switch downstream ports the
// kernel set to redirect peer traffic (pci_std_enable_acs: SV|RR|CR|UF): no pair is ready, each
// for acs_redirect. Read unprivileged, the same board's ACS state is unknown: the verdict is
// Unknown (acs_unknown), never Yes. Two equally near NICs tie-break in natural order: the nearest
// of the GPU behind mlx5_2 and mlx5_10 is mlx5_2.
func TestResolveHGXIommuPT(t *testing.T) {
	topo := resolve(t, "hgx-iommu-pt", false)
	shown := 0
	for _, p := range topo.Pairs {
		if !p.Shown {
			continue
		}
		shown++
		assert.Equal(t, No, p.Ready)
		assert.Equal(t, ReasonACSRedirect, p.Reason)
	}
	assert.Equal(t, 16, shown, "two PIX NICs per GPU")
	g0, g4, g7 := topo.GPUs[0], topo.GPUs[4], topo.GPUs[7]
	assert.Equal(t, pci.ACSRedirect, pairOf(t, topo, g0.Address(), "mlx5_0").ACS)
	assert.Equal(t, pci.IOMMUPassthrough, g0.IOMMU)
	n, _ := nearestOf(topo, g4.Address())
	assert.Equal(t, "mlx5_2", n.NIC.Name)
	assert.Equal(t, pci.PathPIX, pairOf(t, topo, g4.Address(), "mlx5_10").Path, "a tie")
	n, _ = nearestOf(topo, g7.Address())
	assert.Equal(t, "mlx5_3", n.NIC.Name)

	topo = resolve(t, "hgx-unprivileged", false)
	shown = 0
	for _, p := range topo.Pairs {
		if !p.Shown {
			continue
		}
		shown++
		assert.Equal(t, Unknown, p.Ready, "unknown ACS is never ready")
		assert.Equal(t, ReasonACSUnknown, p.Reason)
	}
	assert.Equal(t, 16, shown)
	assert.Equal(t, pci.ACSUnknown, pairOf(t, topo, topo.GPUs[0].Address(), "mlx5_0").ACS)
}

func TestResolveDGXH100(t *testing.T) {
	topo := resolve(t, "dgx-h100", false)
	require.Len(t, topo.GPUs, 8)
	require.Len(t, topo.NICs, 12)
	shown := 0
	for _, p := range topo.Pairs {
		if p.Shown {
			shown++
		}
	}
	assert.Equal(t, 8, shown, "each GPU's PIX NIC")
	for i, c := range testfs.DGXComputeNICs {
		n, ok := nearestOf(topo, topo.GPUs[i].Address())
		require.True(t, ok)
		assert.Equal(t, c.RDMA, n.NIC.Name)
		assert.Equal(t, pci.PathPIX, n.Path)
		assert.Equal(t, Yes, n.Ready)
	}
	p := pairOf(t, topo, topo.GPUs[0].Address(), "mlx5_11")
	assert.Equal(t, pci.PathSYS, p.Path)
	assert.Equal(t, ReasonPCIePath, p.Reason)
	assert.False(t, p.Shown)
	assert.Len(t, resolve(t, "dgx-h100", true).Pairs, 96)
}

// TestResolveGen5InGen4: a Gen5 NIC trained to 16 GT/s under a Gen4 upstream port runs at what
// the link can reach (pcie_bandwidth_available, drivers/pci/pci.c).
func TestResolveGen5InGen4(t *testing.T) {
	nic := nicByName(resolve(t, "gen5-in-gen4", false), "mlx5_0")
	assert.Equal(t, No, nic.LinkDegraded())
	assert.Equal(t, 32.0, nic.Link.MaxSpeedGTs, "the device's own maximum is kept")
	assert.Equal(t, 16.0, nic.Capable.MaxSpeedGTs)
}

// TestResolveNoNUMA: numa_node -1 on both host bridges is unknown, never NODE; the verdict is
// unknown (path_unknown), and the pair is still the GPU's nearest.
func TestResolveNoNUMA(t *testing.T) {
	topo := resolve(t, "no-numa", false)
	p := pairOf(t, topo, "0000:13:00.0", "mlx5_0")
	assert.Equal(t, pci.PathUnknown, p.Path)
	assert.Equal(t, Unknown, p.Ready)
	assert.Equal(t, ReasonPathUnknown, p.Reason)
	assert.True(t, p.Shown)
	_, ok := nearestOf(topo, "0000:13:00.0")
	assert.True(t, ok)
}

// TestResolveSkipsNICsWithoutFunction: a NIC without a PCI function (rxe) and a second RDMA device on the same
// function are left out.
func TestResolveSkipsNICsWithoutFunction(t *testing.T) {
	node := topologytest.OnePair()
	root := t.TempDir()
	testfs.WritePCINode(t, root, node)
	topo, err := Resolve(&sysfs.Reader{}, root, filepath.Join(root, "sys"),
		[]NIC{{"mlx5_0", "0000:14:00.0"}, {"rxe0", ""}, {"smi0", "0000:14:00.0"}}, true)
	require.NoError(t, err)
	require.Len(t, topo.NICs, 1)
	assert.Equal(t, "mlx5_0", topo.NICs[0].Name)
}

func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{"6.8.0-45-generic": true, "5.12.0": true, "5.11.22": false, "4.18.0-553.el8": false, "garbage": false} {
		assert.Equal(t, want, kernelAtLeast(rel, 5, 12), rel)
	}
}
