package topology

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// graceNode is a Grace Hopper node as Linux lays out its PCI tree: on Grace every PCIe root port
// is the only port of its own host bridge and PCI segment (domain), each with bus 00: the Hopper
// GPU, attached through NVLink-C2C, is 0009:01:00.0 behind root port 0009:00:00.0, a ConnectX-7 is
// 0000:01:00.0 behind root port 0000:00:00.0 (NVIDIA GH200 platform notes and `lspci` of GH200
// systems; host bridges pci<segment>:00 as drivers/pci/probe.c pci_register_host_bridge names
// them). Each function's numa_node is its Grace socket's node (the host bridge's proximity domain;
// an inference: a real node's /sys/bus/pci/devices/0009:01:00.0/numa_node is the check). With
// twoSockets a second superchip (GB200-style tray) adds its GPU on segment 0019 and a NIC on
// segment 0010, on node 1. IDs: GH200 GPU 10de:2342 and ConnectX-7 15b3:1021 (pci.ids); the Grace
// root port's device id is inferred (class 0x060400 is what the classification reads).
func graceNode(twoSockets bool) testfs.PCINode {
	rootPort := func(seg string, node int, endpoint testfs.PCIFunction) testfs.PCIRootBus {
		return testfs.PCIRootBus{Name: "pci" + seg + ":00", NUMANode: node, RootPorts: []testfs.PCIFunction{{
			Address: seg + ":00:00.0", Vendor: 0x10de, DevID: 0x22b2, Class: 0x060400, IOMMUGroup: -1,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16, Children: []testfs.PCIFunction{endpoint},
		}}}
	}
	gpu := func(seg string, group int) testfs.PCIFunction {
		return testfs.PCIFunction{Address: seg + ":01:00.0", Vendor: 0x10de, DevID: 0x2342, Class: 0x030200, IOMMUGroup: group,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
	}
	nic := func(seg, name string, group int) testfs.PCIFunction {
		return testfs.PCIFunction{Address: seg + ":01:00.0", Vendor: 0x15b3, DevID: 0x1021, Class: 0x020700, IOMMUGroup: group, RDMA: name,
			Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}
	}
	n := testfs.PCINode{IOMMUGroupType: map[int]string{1: "identity", 9: "identity"},
		Modules: []string{"nvidia_peermem", "mlx5_core", "mlx5_ib"}, NVIDIAVersion: "570.124.06", KernelRelease: "6.8.0-1021-nvidia-64k"}
	n.RootBuses = []testfs.PCIRootBus{rootPort("0000", 0, nic("0000", "mlx5_0", 1)), rootPort("0009", 0, gpu("0009", 9))}
	if twoSockets {
		n.IOMMUGroupType[10], n.IOMMUGroupType[19] = "identity", "identity"
		n.RootBuses = append(n.RootBuses, rootPort("0010", 1, nic("0010", "mlx5_1", 10)), rootPort("0019", 1, gpu("0019", 19)))
	}
	return n
}

func resolveGrace(t *testing.T, twoSockets bool) *Topology {
	node := graceNode(twoSockets)
	root := t.TempDir()
	testfs.WritePCINode(t, root, node)
	topo, err := Resolve(&sysfs.Reader{}, root, filepath.Join(root, "sys"), nicsOf(node), true)
	require.NoError(t, err)
	return topo
}

// The GH200 PCIe path across PCI segments: GPU and NIC on root buses that share the bus number 00
// but not the segment are on different host bridges (never PHB or closer), and within one NUMA
// node: NODE. A NIC of the other Grace socket is SYS, and each GPU's nearest NIC is its own
// socket's.
func TestGH200PathAcrossSegments(t *testing.T) {
	topo := resolveGrace(t, false)
	require.Len(t, topo.GPUs, 1)
	require.Len(t, topo.NICs, 1)
	p := pairOf(t, topo, "0009:01:00.0", "mlx5_0")
	assert.Equal(t, pci.PathNODE, p.Path, "segments 0009 and 0000, both bus 00, one node")
	assert.Equal(t, "pci0009:00", topo.GPUs[0].PCI.RootBus)
	assert.Equal(t, "pci0000:00", topo.NICs[0].PCI.RootBus)
	n, ok := nearestOf(topo, "0009:01:00.0")
	require.True(t, ok)
	assert.Equal(t, "mlx5_0", n.NIC.Name)
	// The GPUDirect verdict of NODE is readiness()'s (PHB or farther); NCCL's own path type for a
	// C2C-attached GPU is not modelled here.
	t.Logf("GH200 local pair: path %s, ready %v, reason %v", p.Path, p.Ready, p.Reason)

	tray := resolveGrace(t, true)
	require.Len(t, tray.GPUs, 2)
	assert.Equal(t, pci.PathNODE, pairOf(t, tray, "0019:01:00.0", "mlx5_1").Path)
	assert.Equal(t, pci.PathSYS, pairOf(t, tray, "0019:01:00.0", "mlx5_0").Path, "the other socket's NIC")
	assert.Equal(t, pci.PathSYS, pairOf(t, tray, "0009:01:00.0", "mlx5_1").Path)
	for gpu, want := range map[string]string{"0009:01:00.0": "mlx5_0", "0019:01:00.0": "mlx5_1"} {
		n, ok := nearestOf(tray, gpu)
		require.True(t, ok, gpu)
		assert.Equal(t, want, n.NIC.Name, gpu)
	}
}
