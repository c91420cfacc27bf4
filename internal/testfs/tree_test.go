package testfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTreeWriteAndEntries: what Write lays out on disk is what Entries hands to a recording; a
// path added twice keeps its last content, Remove takes a subtree away.
func TestTreeWriteAndEntries(t *testing.T) {
	var tr Tree
	tr.Dir("sys/class/infiniband")
	tr.Attr("sys/devices/pci0000:17/0000:17:00.0/vendor", "0x8086")
	tr.Attr("sys/devices/pci0000:17/0000:17:00.0/vendor", "0x10b5") // rewritten
	tr.File("sys/devices/uncore_imc_0/events/cas_count_read", "event=0x04,umask=0x03")
	tr.Bytes("sys/devices/pci0000:17/0000:17:00.0/config", []byte{0x86, 0x80, 0, 0})
	tr.Link("sys/bus/pci/devices/0000:17:00.0", "../../../devices/pci0000:17/0000:17:00.0")
	tr.Attr("sys/devices/gone/a", "1")
	tr.Attr("sys/devices/gone/b/c", "2")
	tr.Attr("sys/devices/gonefar", "kept") // a sibling whose name starts the same
	tr.Remove("sys/devices/gone")

	paths := []string{}
	for _, e := range tr.Entries() {
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"sys/class/infiniband", "sys/devices/pci0000:17/0000:17:00.0/vendor",
		"sys/devices/uncore_imc_0/events/cas_count_read", "sys/devices/pci0000:17/0000:17:00.0/config",
		"sys/bus/pci/devices/0000:17:00.0", "sys/devices/gonefar"}, paths)

	root := t.TempDir()
	require.NoError(t, tr.Write(root))
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "0x10b5\n", read("sys/devices/pci0000:17/0000:17:00.0/vendor"))
	assert.Equal(t, "event=0x04,umask=0x03", read("sys/devices/uncore_imc_0/events/cas_count_read"), "File writes the content as it is")
	assert.Equal(t, "\x86\x80\x00\x00", read("sys/bus/pci/devices/0000:17:00.0/config"), "through the link")
	l, err := os.Readlink(filepath.Join(root, "sys/bus/pci/devices/0000:17:00.0"))
	require.NoError(t, err)
	assert.Equal(t, "../../../devices/pci0000:17/0000:17:00.0", l)
	fi, err := os.Stat(filepath.Join(root, "sys/class/infiniband"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	_, err = os.Stat(filepath.Join(root, "sys/devices/gone"))
	assert.True(t, os.IsNotExist(err))
}

// TestTreeRefusesLinksOut: a link out of the tree is an error, as in a replayed recording.
func TestTreeRefusesLinksOut(t *testing.T) {
	var tr Tree
	tr.Link("sys/class/net/eth0", "../../../../etc")
	assert.Error(t, tr.Write(t.TempDir()))
}
