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

func resolveGrace(t *testing.T, twoSockets bool) *Topology {
	node := testfs.GraceNode(twoSockets)
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
