//go:build linux

package otelcoliclens_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestFaultStuckRead: mlx5_4/1's port_xmit_data, a kept counter file read on every scrape, is
// served by a FUSE stand-in whose read blocks, as a sysfs read of an mlx5 PMA counter blocks
// behind hung firmware (testfs.StuckDir cites the driver). Unlike a named pipe, which the
// receiver refuses before reading, this file is a regular file, so the collector's read really
// enters the kernel and stays there. The collector reports mlx5_4 once and stops reading it; the
// other devices keep moving, /metrics and the health check keep answering, and SIGTERM finishes
// the collector's shutdown within a bound. The process itself cannot finish exiting while its
// thread is in the stuck read (the kernel waits for the read, as it does for the driver's
// uninterruptible firmware wait); it exits once the read is released.
func TestFaultStuckRead(t *testing.T) {
	bin := collectorBinary(t)
	root := fixtureNode(t)
	// Mounted before the collector starts, so that the cleanup releases the read and unmounts
	// after the collector's cleanup has killed it (t.Cleanup runs last-in first-out).
	stuck := testfs.MountStuckDir(t, filepath.Join(deviceDir(t, root, "mlx5_4"), "ports", "1", "counters"))
	addr, health := freeAddr(t), freeAddr(t)
	cfg := strings.Replace(rnicConfig(root, addr, "    slow_interval: 400ms"), "service:\n",
		fmt.Sprintf("extensions:\n  health_check: {endpoint: %s}\nservice:\n  extensions: [health_check]\n", health), 1)
	c := startFaultCollector(t, bin, cfg)

	// The first readings are the baselines (metadata/start-time.md): every counter serves 0.
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx4_1/1",direction="transmit"} 0`,
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 0`,
		`interconnect_io_bytes_total{component="rnic",device="mlx5_4/1",direction="transmit"} 0`,
	})
	stuck.Block("port_xmit_data")
	require.Eventually(t, func() bool { return stuck.Waiting() == 1 }, waitServed, 20*time.Millisecond,
		"the collector's read of mlx5_4/1 port_xmit_data is stuck in the kernel")
	named := "mlx5_4: reads did not return within"
	require.Eventually(t, func() bool { return strings.Contains(c.logs.String(), named) },
		waitLogged, 100*time.Millisecond, "the stuck device is named in the log")

	// The other devices keep moving: each growth of their counters is served (x4: the PMA data
	// counters count 4-octet words), twice over.
	base := map[string]uint64{}
	for _, dev := range []string{"mlx5_bond_0", "mlx4_1"} {
		b, err := os.ReadFile(filepath.Join(deviceDir(t, root, dev), "ports", "1", "counters", "port_xmit_data"))
		require.NoError(t, err)
		base[dev], err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		require.NoError(t, err)
	}
	for round, factor := range []uint64{1, 3} { // 2v after the first growth, 4v after the second
		var want []string
		for dev, v := range base {
			testfs.GrowCounters(t, deviceDir(t, root, dev))
			want = append(want, fmt.Sprintf(
				`interconnect_io_bytes_total{component="rnic",device="%s/1",direction="transmit"} %d`, dev, factor*v*4))
		}
		scrapeUntil(t, addr, want)
		assert.Equal(t, http.StatusOK, healthStatus(health), "health answers while a read is stuck (round %d)", round)
	}
	// mlx5_4's series leave what is served (metric_expiration: 2s); the stuck read is still the
	// only one: the device is not read again while it is stuck.
	require.Eventually(t, func() bool {
		body := metricsText(addr)
		return body != "" && !strings.Contains(body, `device="mlx5_4/`)
	}, waitServed, 200*time.Millisecond, "mlx5_4's series are still served")
	assert.Equal(t, 1, stuck.Waiting(), "one read stuck, none piled up behind it")
	assert.Equal(t, 1, saidByReceiver(c.logs.String(), named), "named once by the receiver")

	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	// The read never returns until the test releases it, so any deadline tells a shutdown that
	// waits for it (forever) from one that does not; a generous one does not depend on speed.
	require.Eventually(t, func() bool { return strings.Contains(c.logs.String(), "Shutdown complete.") },
		waitExit, 10*time.Millisecond, "the collector's shutdown waited for the stuck read")
	took := time.Since(start)
	t.Logf("SIGTERM to shutdown complete with a read stuck: %s", took)
	select {
	case <-c.exited:
		t.Logf("the process exited %s after SIGTERM with the read still stuck", time.Since(start))
	case <-time.After(500 * time.Millisecond):
		t.Logf("the process is held by the kernel while its read is stuck (%s after SIGTERM); releasing it", time.Since(start))
		released := time.Now()
		stuck.Release()
		select {
		case <-c.exited:
			t.Logf("released read to process exit: %s", time.Since(released))
		case <-time.After(waitExit):
			t.Fatal("the process did not exit after its read was released")
		}
	}
}

// healthStatus is the health check extension's answer (0 when it does not answer).
func healthStatus(addr string) int {
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
