//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lines are in the form strace 6.x prints with -f -y (taken from a run of the harness, paths
// shortened): a call split over two lines by another thread's, reads of files and of sockets, a
// read at end of file, failed and directory opens.
const straceSample = `24128 openat(AT_FDCWD</>, "/n/sys/class/infiniband/mlx5_0/ports/1/state", O_RDONLY|O_CLOEXEC) = 11</n/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/infiniband/mlx5_0/ports/1/state>
24128 pread64(11</n/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/infiniband/mlx5_0/ports/1/state>, "4: ACTIVE\n", 256, 0) = 10
24128 pread64(13</n/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/infiniband/mlx5_0/ports/1/rate>, "100 Gb/sec (4X EDR)\n", 256, 0) = 20
24130 pread64(14</n/sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/infiniband/mlx5_0/ports/1/counters/port_xmit_data> <unfinished ...>
24108 read(8<socket:[150774]>, "GET /metrics HTTP/1.1\r\nHost: 127"..., 4096) = 103
24130 <... pread64 resumed>"0\n", 256, 0) = 2
24121 openat(AT_FDCWD</>, "/n/sys/class/infiniband/mlx5_1/ports/1/counters/symbol_error", O_RDONLY|O_CLOEXEC) = 9</n/sys/devices/pci0000:00/0000:00:00.1/0000:02:00.0/infiniband/mlx5_1/ports/1/counters/symbol_error>
24121 read(9</n/sys/devices/pci0000:00/0000:00:00.1/0000:02:00.0/infiniband/mlx5_1/ports/1/counters/symbol_error>, "0\n", 128) = 2
24121 read(9</n/sys/devices/pci0000:00/0000:00:00.1/0000:02:00.0/infiniband/mlx5_1/ports/1/counters/symbol_error>, "", 126) = 0
24121 read(9</n/sys/devices/pci0000:00/0000:00:00.1/0000:02:00.0/infiniband/mlx5_1/ports/1/counters/VL15_dropped>, 0xc000, 128) = -1 EINVAL (Invalid argument)
24121 openat(AT_FDCWD</>, "/n/sys/class/infiniband", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 7</n/sys/class/infiniband>
24121 openat(AT_FDCWD</>, "/n/sys/class/infiniband/mlx5_0/ports/1/hw_counters", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = -1 ENOENT (No such file or directory)
24121 openat(AT_FDCWD</>, "/etc/hosts", O_RDONLY|O_CLOEXEC) = 10</etc/hosts>
24121 read(10</etc/hosts>, "127.0.0.1 localhost\n", 4096) = 20
`

func TestCountIO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.strace")
	require.NoError(t, os.WriteFile(path, []byte(straceSample), 0o644))
	got, err := countIO(path, "/n/sys")
	require.NoError(t, err)
	assert.Equal(t, fileIO{
		reads:   4, // 3 preads (one resumed) and 1 read with data, of the fixture; not the EOF, EINVAL, socket or /etc reads
		files:   2,
		dirs:    1,
		failed:  1,
		scrapes: 1, // mlx5_0 port 1 state, read once
	}, got)
	assert.Equal(t, 4.0, got.perScrape(got.reads))
}

func TestFdPath(t *testing.T) {
	for call, want := range map[string]string{
		`read(9</n/sys/a/b>, "0\n", 128) = 2`:                     "/n/sys/a/b",
		`pread64(11</n/sys/x/state>, "4: ACTIVE\n", 256, 0) = 10`: "/n/sys/x/state",
		`read(8<socket:[150774]>, "GET", 4096) = 103`:             "socket:[150774]",
		`read(3, "x", 1) = 1`:                                     "",
	} {
		assert.Equal(t, want, fdPath(call), call)
		assert.False(t, strings.HasPrefix(fdPath(call), "<"))
	}
}
