package otelcoliclens_test

// The fault-injection suite: the built collector on a fixture node into which one fault at a
// time is injected, asserting that only the affected series are lost, that the others keep
// moving and that the process still stops within a bound. `make test` runs it (go test -run Fault).

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// faultCollector is a collector process the test stops itself, to time the stop.
type faultCollector struct {
	logs   *syncbuf.Buffer
	cmd    *exec.Cmd
	exited chan error
}

func startFaultCollector(t *testing.T, bin, config string) *faultCollector {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))
	c := &faultCollector{logs: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	c.cmd = exec.Command(bin, "--config", cfgPath)
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	require.NoError(t, c.cmd.Start())
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("collector log:\n%s", c.logs.String())
		}
	})
	return c
}

// stop sends sig and returns how long the process took to exit (failing past limit).
func (c *faultCollector) stop(t *testing.T, sig os.Signal, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, c.cmd.Process.Signal(sig))
	select {
	case <-c.exited:
		return time.Since(start)
	case <-time.After(limit):
		t.Fatalf("the collector did not exit within %s of %s", limit, sig)
	}
	return 0
}

// fixtureNode copies the synthetic node (receiver/rnicreceiver/testdata/synthetic) to a temporary
// root and returns it with the device directory of each RDMA device, resolved through its class link.
func fixtureNode(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("..", "..", "receiver", "rnicreceiver", "testdata", "synthetic"), root)
	return root
}

func deviceDir(t *testing.T, root, dev string) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(filepath.Join(root, "sys", "class", "infiniband", dev))
	require.NoError(t, err)
	return d
}

func rnicConfig(root, addr, extra string) string {
	return rnicConfigEvery("200ms", root, addr, extra)
}

func rnicConfigEvery(interval, root, addr, extra string) string {
	return fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: %s
    root_path: %s
    ethtool: {enabled: false}
    topology: {enabled: false}
%s
exporters:
  prometheus:
    endpoint: %s
    metric_expiration: 2s
service:
  pipelines:
    metrics: {receivers: [rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, interval, root, extra, addr)
}

// saidByReceiver counts the log lines that mention what, other than scraperhelper's own "Error
// scraping metrics" lines: a receiver returns a failure with every scrape it fails (scraperhelper
// logs each), and says it itself once, when it starts.
func saidByReceiver(logs, what string) int {
	n := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, what) && !strings.Contains(l, "Error scraping metrics") {
			n++
		}
	}
	return n
}

// metricsText returns what the Prometheus exporter serves now ("" when it does not answer).
func metricsText(addr string) string {
	b, _ := fetchMetrics(addr)
	return b
}

// fetchMetrics reads /metrics, with the error that cut it short: a refused connection, a
// status other than 200, or a body that ended early.
func fetchMetrics(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %s", resp.Status)
	}
	return string(b), err
}

// TestFaultCraftedRecording: recordings are handed over by operators and treated as untrusted. A
// recording whose tree holds a link out of the replay directory (absolute, or climbing with "..")
// with files "under" it is refused at start, naming the record, and nothing is written outside.
func TestFaultCraftedRecording(t *testing.T) {
	bin := collectorBinary(t)
	for name, link := range map[string]string{"absolute": "", "dotdot": "../../../../../../../../.."} {
		t.Run(name, func(t *testing.T) {
			outside := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("hunter2"), 0o600))
			target := link
			if target == "" {
				target = outside
			} else {
				target += outside
			}
			file := filepath.Join(t.TempDir(), "crafted.jsonl")
			w, err := recording.Create(file, recording.Header{Receiver: "rnic", Interval: recording.Duration(200 * time.Millisecond)})
			require.NoError(t, err)
			t0 := time.Now().UTC()
			require.NoError(t, w.Write(recording.Record{Time: t0, Tree: []recording.Entry{
				{Path: "sys/class/infiniband", Dir: true},
				{Path: "sys/class/infiniband/evil", Link: target},
				{Path: "sys/class/infiniband/evil/pwned", Data: recording.Text("x")},
				{Path: "sys/class/infiniband/evil/secret", Data: recording.Text("overwritten")},
			}}))
			require.NoError(t, w.Write(recording.Record{Time: t0, Files: map[string]string{"sys/class/infiniband/evil/secret": "overwritten"}}))
			require.NoError(t, w.Close())

			cfg := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: 200ms
    recording: {replay: %s}
exporters:
  prometheus: {endpoint: %s}
service:
  pipelines:
    metrics: {receivers: [rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, file, freeAddr(t))), 0o600))
			cmd := exec.Command(bin, "--config", cfg)
			done := make(chan []byte, 1)
			go func() { out, _ := cmd.CombinedOutput(); done <- out }()
			var out []byte
			select {
			case out = <-done:
			case <-time.After(waitExit):
				// A refused start exits at once; a collector still running this long started.
				_ = cmd.Process.Kill()
				t.Fatal("the collector started on a crafted recording")
			}
			assert.Contains(t, string(out), `record "sys/class/infiniband/evil"`)
			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "nothing written outside the replay directory")
			b, err := os.ReadFile(filepath.Join(outside, "secret"))
			require.NoError(t, err)
			assert.Equal(t, "hunter2", string(b))
		})
	}
}

// TestFaultDeviceVanishes: mlx4_1 is unplugged (its class link and device directory removed).
// Its series leave what the collector serves within a few intervals (the receiver stops
// reporting them at its next device listing; the exporter's metric_expiration drops them); the
// other devices keep moving. The test logs how long the drop took.
func TestFaultDeviceVanishes(t *testing.T) {
	bin := collectorBinary(t)
	root := fixtureNode(t)
	addr := freeAddr(t)
	startFaultCollector(t, bin, rnicConfig(root, addr, "    slow_interval: 400ms"))
	// The first readings are the baselines (metadata/start-time.md); then every counter grows by
	// the fixture's own value, which the collector serves as counted since.
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx4_1/1",direction="transmit"} 0`,
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 0`,
	})
	testfs.GrowCounters(t, root)
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx4_1/1",direction="transmit"} 4000`,
		`rnic_port_state{device="mlx4_1/2"} 4`,
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 341515586352`,
	})
	dev := deviceDir(t, root, "mlx4_1")
	require.NoError(t, os.Remove(filepath.Join(root, "sys", "class", "infiniband", "mlx4_1")))
	require.NoError(t, os.RemoveAll(dev))
	gone := time.Now()
	require.Eventually(t, func() bool {
		body := metricsText(addr)
		return body != "" && !strings.Contains(body, `"mlx4_1/`)
	}, waitServed, 100*time.Millisecond, "mlx4_1's series are still served")
	t.Logf("a vanished device's series left /metrics after %s (metric_expiration 2s, collection_interval 200ms, slow_interval 400ms)", time.Since(gone).Round(100*time.Millisecond))

	bond := filepath.Join(deviceDir(t, root, "mlx5_bond_0"), "ports", "1", "counters")
	rel, err := filepath.Rel(root, bond)
	require.NoError(t, err)
	// Below the grown value: a reset, after which the raw reading is what was counted since.
	testfs.SetUint(t, root, filepath.Join(rel, "port_xmit_data"), 85378896588+1000)
	scrapeUntil(t, addr, []string{`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 341515590352`})
}
