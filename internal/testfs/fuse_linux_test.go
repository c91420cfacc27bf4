package testfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStuckDir: reads pass through to the directory's files, through a descriptor kept open too
// (each read reaches the file, as each read of a sysfs attribute calls its show()); a read of a
// stuck file does not return until Release, while the other files keep being read.
func TestStuckDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "counters")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "port_xmit_data"), []byte("10\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "port_rcv_data"), []byte("20\n"), 0o644))
	s := MountStuckDir(t, dir)

	kept, err := os.Open(filepath.Join(dir, "port_rcv_data"))
	require.NoError(t, err)
	defer kept.Close()
	buf := make([]byte, 64)
	n, err := kept.ReadAt(buf, 0)
	require.True(t, err == nil || errors.Is(err, io.EOF), "%v", err)
	assert.Equal(t, "20\n", string(buf[:n]))
	SetUint(t, dir, "port_rcv_data", 21)
	n, _ = kept.ReadAt(buf, 0)
	assert.Equal(t, "21\n", string(buf[:n]), "a kept descriptor reads the new value")

	s.Block("port_xmit_data")
	got := make(chan string, 1)
	go func() {
		b, err := os.ReadFile(filepath.Join(dir, "port_xmit_data"))
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(b)
	}()
	require.Eventually(t, func() bool { return s.Waiting() == 1 }, time.Minute, 10*time.Millisecond, "the read reached the stuck file")
	select {
	case v := <-got:
		t.Fatalf("the stuck read returned %q", v)
	case <-time.After(200 * time.Millisecond):
	}
	n, _ = kept.ReadAt(buf, 0)
	assert.Equal(t, "21\n", string(buf[:n]), "the other files are read meanwhile")

	s.Release()
	select {
	case v := <-got:
		assert.Equal(t, "10\n", v)
	case <-time.After(time.Minute):
		t.Fatal("the read did not return within a minute of Release")
	}
	assert.Zero(t, s.Waiting())
}
