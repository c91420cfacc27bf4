//go:build linux

package otelcoliclens_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The fault tests that need Linux itself: a named pipe in sysfs's place and /proc's count of open
// descriptors.

// TestFaultNamedPipeCounter: a named pipe in place of mlx4_1/1's symbol_error (where a real node
// has a sysfs read stuck behind hung firmware, the read blocks the same way: until someone
// writes). The collector refuses it, naming the file once; every other series keeps moving,
// mlx4_1/1's other counters included; SIGTERM stops the process within a bound.
func TestFaultNamedPipeCounter(t *testing.T) {
	bin := collectorBinary(t)
	root := fixtureNode(t)
	addr := freeAddr(t)
	// symbol_error is a slow counter, opened on each read (every slow_interval).
	c := startFaultCollector(t, bin, rnicConfig(root, addr, "    slow_interval: 400ms"))
	// The first readings are the baselines (metadata/start-time.md): every counter serves 0.
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 0`,
		`rnic_port_errors_total{device="mlx4_1/1",counter="symbol_error"} 0`,
	})
	fifo := filepath.Join(deviceDir(t, root, "mlx4_1"), "ports", "1", "counters", "symbol_error")
	require.NoError(t, os.Remove(fifo))
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	// The receiver names files by the class path it reads them through.
	named := filepath.Join(root, "sys", "class", "infiniband", "mlx4_1", "ports", "1", "counters", "symbol_error") + ": not a regular file"

	bond := filepath.Join(deviceDir(t, root, "mlx5_bond_0"), "ports", "1", "counters")
	rel, err := filepath.Rel(root, bond)
	require.NoError(t, err)
	for i := uint64(1); i <= 3; i++ {
		testfs.SetUint(t, root, filepath.Join(rel, "port_xmit_data"), 85378896588+i*250_000_000)
		scrapeUntil(t, addr, []string{fmt.Sprintf(
			`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} %d`, i*250_000_000*4)})
	}
	require.Eventually(t, func() bool { return strings.Contains(c.logs.String(), named) },
		waitLogged, 100*time.Millisecond, "the pipe is named in the log")
	// The pipe's series leaves what is served (metric_expiration); mlx4_1/1's others stay.
	require.Eventually(t, func() bool {
		return !strings.Contains(metricsText(addr), `rnic_port_errors_total{counter="symbol_error",device="mlx4_1/1"}`)
	}, waitServed, 200*time.Millisecond, "the pipe's series leaves /metrics (metric_expiration)")
	scrapeUntil(t, addr, []string{`rnic_port_errors_total{device="mlx4_1/1",counter="link_downed"} 0`})
	assert.Equal(t, 1, saidByReceiver(c.logs.String(), named), "named once by the receiver")
	assert.Contains(t, c.logs.String(), "Error scraping metrics", "and returned with the scrapes it fails")

	took := c.stop(t, syscall.SIGTERM, waitExit)
	t.Logf("SIGTERM to exit: %s", took)
}

// TestFaultManyPorts: 1600 RoCE ports (testfs.ScaleRDMANode). The collector serves them all, its
// open descriptors stay below the receiver's cap on kept files plus its own (no EMFILE, /metrics
// keeps answering); the test logs the count.
func TestFaultManyPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1600-port node")
	}
	bin := collectorBinary(t)
	root := t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, testfs.ScaleRDMANode(1600)))
	addr := freeAddr(t)
	c := startFaultCollector(t, bin, rnicConfigEvery("2s", root, addr, ""))
	scrapeUntil(t, addr, []string{
		`rnic_port_state{device="mlx5_0/1"} 4`,
		`rnic_port_state{device="mlx5_1599/1"} 4`,
	})
	time.Sleep(3 * time.Second) // a scrape between slow ones too
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", c.cmd.Process.Pid))
	require.NoError(t, err)
	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	t.Logf("open files of the collector at 1600 ports: %d (RLIMIT_NOFILE %d)", len(fds), lim.Cur)
	t.Logf("the collector's descriptors by what they name: %v", fdKinds(c.cmd.Process.Pid, fds))
	assert.Less(t, uint64(len(fds)), min(lim.Cur/4, 8192)+64, "kept files stay under the cap")
	// Still serving: a /metrics answer holding the last port. On a loaded machine one 1600-port
	// answer can be cut off (a read past the client's patience); each failure is logged, and
	// the test waits for one whole answer, as a Prometheus server would retry at its next scrape.
	require.Eventually(t, func() bool {
		body, err := fetchMetrics(addr)
		if err != nil {
			t.Logf("/metrics: %v", err)
			return false
		}
		return hasSample(body, `rnic_port_state{device="mlx5_1599/1"} 4`)
	}, waitServed, time.Second, "still serving every port")
	c.stop(t, syscall.SIGTERM, waitExit)
}

// fdKinds counts a process's descriptors by what they name: a file's directory with the port's
// name cut out (".../infiniband/mlx5_N/ports/1/counters"), or the kind of a socket, pipe or
// anonymous inode; so that a failure says which reads hold them.
func fdKinds(pid int, fds []os.DirEntry) map[string]int {
	kinds := map[string]int{}
	device := regexp.MustCompile(`mlx5_\d+|ib\d+|ens\d+np\d+|pci[0-9a-f]{4}:[0-9a-f]{2}|[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d`)
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		switch {
		case err != nil:
			kinds["(gone)"]++
		case strings.Contains(target, "/sys/"):
			dir := filepath.Dir(target)
			kinds[device.ReplaceAllString(dir[strings.Index(dir, "/sys/"):], "N")]++
		case strings.HasPrefix(target, "/"):
			kinds[target]++
		default:
			kinds[strings.SplitN(target, ":", 2)[0]]++
		}
	}
	return kinds
}
