package nvidiaproc

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestList reads the files as nv-procfs.c prints them (testfs.NvidiaGPUs), in PCI order whatever
// the directory order, and names the file with a garbage minor without losing the others.
func TestList(t *testing.T) {
	root := t.TempDir()
	tree := &testfs.Tree{}
	tree.NvidiaGPUs([]testfs.NvidiaGPU{
		{BusID: "0000:3b:00.0", UUID: "GPU-bbbb", Model: "NVIDIA H100 80GB HBM3", Minor: 1},
		{BusID: "0000:18:00.0", UUID: "GPU-aaaa", Model: "NVIDIA H100 80GB HBM3", Minor: 0},
	})
	tree.File("proc/driver/nvidia/gpus/0000:5d:00.0/information", "GPU UUID: \t GPU-cccc\nDevice Minor: \t two\n")
	require.NoError(t, tree.Write(root))

	gpus, err := List(filepath.Join(root, "proc"))
	assert.Equal(t, []GPU{{Address: "0000:18:00.0", UUID: "GPU-aaaa", Minor: 0}, {Address: "0000:3b:00.0", UUID: "GPU-bbbb", Minor: 1}}, gpus)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `0000:5d:00.0/information: Device Minor: not a number, got "two"`)

	gpus, err = List(filepath.Join(t.TempDir(), "proc"))
	assert.NoError(t, err, "no driver loaded")
	assert.Empty(t, gpus)
}
