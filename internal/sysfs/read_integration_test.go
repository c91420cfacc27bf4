//go:build linux && integration

package sysfs

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A kept file is read with pread at offset 0, which must show a fresh value each time. On real
// sysfs that is the kernel's documented behaviour (Documentation/filesystems/sysfs.rst: a pread
// with offset 0 calls show() again); this test checks it against this machine's kernel with the
// loopback device's byte counter, which moves when the test sends itself a datagram.
func TestReadKeptRealSysfs(t *testing.T) {
	const path = "/sys/class/net/lo/statistics/tx_bytes"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no loopback statistics in sysfs here: %v", err)
	}
	var r Reader
	before, err := r.ReadUintKept(path)
	require.NoError(t, err)
	require.Equal(t, 1, r.Kept())

	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer conn.Close()
	payload := make([]byte, 1000)
	for range 3 {
		_, err = conn.WriteTo(payload, conn.LocalAddr())
		require.NoError(t, err)
	}
	after, err := r.ReadUintKept(path)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after-before, uint64(3000), "the kept descriptor must read the counter afresh")
	assert.Equal(t, int64(1), r.Opened(), "the second read reuses the descriptor")
	assert.Equal(t, int64(2), r.Reads())
	r.CloseKept()
	assert.Equal(t, 0, r.Kept())
}
