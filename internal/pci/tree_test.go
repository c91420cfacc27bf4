package pci

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layout follows Documentation/PCI/sysfs-pci.rst: /sys/devices/pci0000:17 is root bus 17,
// 0000:17:00.0 a root port on it, 0000:18:00.0 a switch upstream port behind it, and so on.
func TestBelow(t *testing.T) {
	root := t.TempDir()
	bus := RootBusDir(root, "0000:17")
	for _, d := range []string{
		"0000:17:00.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0",
		"0000:17:00.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0",
		"0000:17:00.0/0000:18:00.0/0000:19:01.0/0000:1b:00.1/net/eth2",
		"0000:17:00.0/power",
		"0000:17:02.0",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(bus, d), 0o755))
	}
	// A symlink named like a function (iommu_group-style links) must not be followed.
	require.NoError(t, os.Symlink(bus, filepath.Join(bus, "0000:17:02.0", "0000:99:00.0")))

	port := filepath.Join(bus, FunctionAddress("0000:17", 0, 0))
	got, err := Below(port)
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:18:00.0", "0000:19:00.0", "0000:1a:00.0", "0000:19:01.0", "0000:1b:00.0", "0000:1b:00.1"}, addresses(got))
	assert.Equal(t, filepath.Join(port, "0000:18:00.0", "0000:19:01.0", "0000:1b:00.1"), got[5].Dir)

	got, err = Below(bus)
	require.NoError(t, err)
	all := addresses(got)
	assert.Equal(t, "0000:17:00.0", all[0])
	assert.Contains(t, all, "0000:17:02.0")
	assert.NotContains(t, all, "0000:99:00.0")

	got, err = Below(filepath.Join(bus, "0000:17:03.0"))
	assert.NoError(t, err)
	assert.Empty(t, got)

	assert.Equal(t, "0000:17:02.0", FunctionAddress("0000:17", 2, 0))
	assert.Equal(t, filepath.Join(root, "pci0000:17"), bus)
}

func addresses(fs []Function) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Address
	}
	return out
}
