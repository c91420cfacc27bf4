package pci

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

func TestParsePath(t *testing.T) {
	// Layout from node_exporter issue #2846's `ls -l /sys/class/infiniband`:
	// mlx5_0 -> ../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0
	d, err := parsePath("/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0")
	require.NoError(t, err)
	assert.Equal(t, "0000:3b:00.0", d.Address)
	assert.Equal(t, "0000:3a:00.0", d.RootPort())
	assert.Equal(t, "pci0000:3a", d.RootBus)

	// Behind a PCIe switch (upstream + downstream port), as on DGX-class nodes.
	d, err = parsePath("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:00:01.0", "0000:01:00.0", "0000:02:08.0", "0000:05:00.1"}, d.Chain)

	// Soft-RoCE has no PCI parent (rxe registers with a NULL dma device).
	_, err = parsePath("/sys/devices/virtual/net/eth0")
	assert.True(t, errors.Is(err, ErrNotPCI))
}

func TestFromLink(t *testing.T) {
	root := t.TempDir()
	fn := filepath.Join(root, "devices", "pci0000:3a", "0000:3a:00.0", "0000:3b:00.0")
	require.NoError(t, os.MkdirAll(filepath.Join(fn, "infiniband", "mlx5_0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fn, "numa_node"), []byte("1\n"), 0o644))
	link := filepath.Join(fn, "infiniband", "mlx5_0", "device")
	require.NoError(t, os.Symlink("../../../0000:3b:00.0", link))

	var r sysfs.Reader
	d, err := FromLink(&r, link)
	require.NoError(t, err)
	assert.Equal(t, "0000:3b:00.0", d.Address)
	assert.Equal(t, int64(1), d.NUMANode)

	_, err = FromLink(&r, filepath.Join(root, "nowhere"))
	assert.Error(t, err)
}

// TestFromLinkWithoutNUMA: a kernel built without CONFIG_NUMA has no numa_node attribute
// (drivers/pci/pci-sysfs.c declares it only #ifdef CONFIG_NUMA): the node is unknown (-1), and
// that is no error. The tree is testfs's RDMA writer with the attribute left out.
func TestFromLinkWithoutNUMA(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, []testfs.RDMADevice{{
		Name: "mlx5_0", PCIPath: "pci0000:3a/0000:3a:00.0/0000:3b:00.0", NUMA: "", Driver: "mlx5_core",
		Ports: []testfs.RDMAPort{{Num: 1, LinkLayer: "InfiniBand", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "400 Gb/sec (4X NDR)"}},
	}}))
	var r sysfs.Reader
	d, err := FromLink(&r, filepath.Join(root, "sys", "class", "infiniband", "mlx5_0", "device"))
	require.NoError(t, err)
	assert.Equal(t, "0000:3b:00.0", d.Address)
	assert.Equal(t, int64(-1), d.NUMANode)
}
