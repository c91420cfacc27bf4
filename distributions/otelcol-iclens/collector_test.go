// Package otelcoliclens_test runs the built collector (bin/otelcol-iclens, built by ocb from
// builder-config.yaml) as a user would: as a process, with a config file, read through its
// Prometheus exporter. `make test` builds the binary and points ICLENS_COLLECTOR at it.
package otelcoliclens_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

func collectorBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ICLENS_COLLECTOR")
	if bin == "" {
		t.Skip("ICLENS_COLLECTOR is not set: `make test` builds bin/otelcol-iclens and runs this test against it")
	}
	abs, err := filepath.Abs(bin)
	require.NoError(t, err)
	_, err = os.Stat(abs)
	require.NoError(t, err, "ICLENS_COLLECTOR must name the built collector")
	return abs
}

// How long the end-to-end tests wait for what the collector must do eventually. They bound a wait,
// they never measure a pass: a test waiting for something the collector never does fails at the
// deadline, and one on a busy machine (a shared 2-core CI runner, stress-ng beside it) only takes
// longer. What a test asserts about time is counted in the collector's own samples.
const (
	// waitServed: a value reaches /metrics: the collector's start (tens of seconds on a loaded
	// machine) and a few collection intervals.
	waitServed = 60 * time.Second
	// waitLogged: a line the collector must log after a fault, a few collection or read-timeout
	// intervals after it.
	waitLogged = 30 * time.Second
	// waitExit: the process exits after SIGTERM (its shutdown, the exporters' last flush).
	waitExit = 30 * time.Second
)

// handedOut holds every address freeAddr has returned in this process.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// freeAddr returns a loopback address that was free a moment ago, for a listener of the test's
// collector. The port is closed again before the collector binds it, so the kernel may offer it
// to the next caller: an address is never handed out twice, or two tests running side by side
// (t.Parallel) could be given the same port.
func freeAddr(t *testing.T) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		l.Close()
		handedOut.Lock()
		taken := handedOut.addrs[addr]
		handedOut.addrs[addr] = true
		handedOut.Unlock()
		if !taken {
			return addr
		}
	}
}

// startCollector runs the binary with config and returns its log.
func startCollector(t *testing.T, bin, config string) *syncbuf.Buffer {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o644))
	return startCollectorWith(t, bin, cfgPath, nil)
}

// startCollectorWith runs the binary with a config file and extra environment.
func startCollectorWith(t *testing.T, bin, cfgPath string, env []string) *syncbuf.Buffer {
	t.Helper()
	logs := &syncbuf.Buffer{}
	runCollector(t, bin, []string{"--config", cfgPath}, env, logs)
	return logs
}

// collectorProc is a running collector that a test can stop (SIGTERM) and start again.
type collectorProc struct {
	cmd    *exec.Cmd
	exited chan error
}

// runCollector starts the binary with args, its output appended to logs, and stops it at the
// end of the test if it still runs.
func runCollector(t *testing.T, bin string, args, env []string, logs *syncbuf.Buffer) *collectorProc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	p := &collectorProc{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.stop(10 * time.Second)
		if t.Failed() {
			t.Logf("collector log:\n%s", logs.String())
		}
	})
	// Fail fast if it dies at start (a bad config, a component missing from the build).
	select {
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("collector exited at start: %v\n%s", err, logs.String())
	case <-time.After(500 * time.Millisecond):
	}
	return p
}

// stop sends SIGTERM, as systemd and the kubelet do, and waits up to grace for the exit before
// killing the process. It returns the exit error (nil after a clean shutdown).
func (p *collectorProc) stop(grace time.Duration) error {
	select {
	case err := <-p.exited: // already gone
		p.exited <- err
		return err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		p.exited <- err
		return err
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("collector did not stop within %s", grace)
	}
}

// scrapeUntil polls the Prometheus endpoint until every wanted sample line is served.
func scrapeUntil(t *testing.T, addr string, want []string) string {
	t.Helper()
	var body string
	deadline := time.Now().Add(waitServed)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			missing := 0
			for _, w := range want {
				if !hasSample(body, w) {
					missing++
				}
			}
			if missing == 0 {
				return body
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, w := range want {
		name, rest, _ := strings.Cut(w, "{")
		labels, _, _ := strings.Cut(rest, "} ")
		assert.True(t, hasSample(body, w), "not served: %s (served: %v)", w, sampleValues(body, name, strings.Split(labels, ",")...))
	}
	t.FailNow()
	return ""
}

// hasSample reports whether the exposition holds a sample whose name, labels (a subset, written
// name="value") and value match "name{l1="a",l2="b"} value". Values compare as numbers: the
// exporter prints 341515586352 as 3.41515586352e+11.
func hasSample(body, want string) bool {
	name, rest, _ := strings.Cut(want, "{")
	labels, value, _ := strings.Cut(rest, "} ")
	wantValue, err := strconv.ParseFloat(value, 64)
	if err != nil {
		panic("bad sample in test: " + want)
	}
	for _, got := range sampleValues(body, name, strings.Split(labels, ",")...) {
		if got == wantValue {
			return true
		}
	}
	return false
}

// sampleValues returns the values of the samples of name whose labels include every one of
// labels (written name="value").
func sampleValues(body, name string, labels ...string) []float64 {
	var out []float64
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// TestCollectorServesRNICFixture starts the built collector with the rnic receiver on the
// synthetic fixture node (receiver/rnicreceiver/testdata/synthetic) and checks what its
// Prometheus exporter serves, before and after the counters move. The first scrape is every
// series' baseline (metadata/start-time.md): its counters serve 0; then every counter grows by
// its own value (testfs.GrowCounters), so the fixture's values are what was counted since.
func TestCollectorServesRNICFixture(t *testing.T) {
	bin := collectorBinary(t)
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("..", "..", "receiver", "rnicreceiver", "testdata", "synthetic"), root)
	addr := freeAddr(t)
	logs := startCollector(t, bin, fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: 500ms
    root_path: %s
    ethtool: {enabled: false}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, root, addr))

	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit",numa_node="0",pci_bus_id="0000:3b:00.0"} 0`,
		`interconnect_io_bytes_total{component="netdev",device="bond0",direction="transmit"} 0`,
	})
	testfs.GrowCounters(t, root)
	scrapeUntil(t, addr, []string{
		// 85378896588 four-octet words (telegraf's mlx5_bond_0) = 341515586352 bytes.
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit",numa_node="0",pci_bus_id="0000:3b:00.0"} 341515586352`,
		`interconnect_io_bytes_total{component="netdev",device="bond0",direction="transmit"} 4000`,
		`rnic_port_rate_bytes_per_second{device="mlx5_bond_0/1"} 1.25e+10`,
		`rnic_port_info{device="mlx5_bond_0/1",netdev="bond0",link_layer="Ethernet"} 1`,
		`rnic_counter_saturated{device="mlx4_1/2",counter="port_xmit_data"} 1`,
		`rnic_port_state{device="mlx5_4/12"} 4`,
	})

	bond := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/counters/"
	testfs.SetUint(t, root, bond+"port_xmit_data", 2*85378896588+250_000_000)
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="rnic",device="mlx5_bond_0/1",direction="transmit"} 342515586352`,
	})

	// mlx5_bad's garbage counter is warned about once, and returned with every scrape it fails
	// (scraperhelper logs and counts it). Named by its path: a counter read while GrowCounters
	// rewrites it can fail once too.
	assert.Equal(t, 1, saidByReceiver(logs.String(), "mlx5_bad/ports/1/counters/symbol_error"), "the receiver warns once: %s", logs.String())
	assert.Contains(t, logs.String(), "Error scraping metrics", "and returns the failure with the scrape")
}

// TestCollectorWithoutHardware runs the shipped default configuration on this machine, which has
// no RDMA NIC, no uncore PMU and no GPU: the collector starts, each receiver says once why it has
// nothing, and it stays up without errors or warnings.
func TestCollectorWithoutHardware(t *testing.T) {
	bin := collectorBinary(t)
	addr, telemetry := freeAddr(t), freeAddr(t)
	logs := startCollectorWith(t, bin, "config.yaml", []string{
		"ICLENS_PROMETHEUS_ENDPOINT=" + addr, "ICLENS_HEALTH_ENDPOINT=" + freeAddr(t), "ICLENS_ROOT_PATH=/",
		"ICLENS_TELEMETRY_PORT=" + port(t, telemetry),
		"ICLENS_LENSVIEW_ENDPOINT=" + freeAddr(t),
	})
	// Each receiver says why it has nothing at its first scrape (rnic every 10 s starts with one at
	// once); then two more seconds of scrapes, in which none may say it again.
	require.Eventually(t, func() bool {
		out := logs.String()
		return strings.Contains(out, "No RDMA ports found") && strings.Contains(out, "no usable uncore") && strings.Contains(out, "No GPU metrics")
	}, waitLogged, 200*time.Millisecond, "each receiver's first scrape says why it has nothing:\n%s", logs)
	time.Sleep(2 * time.Second)

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err, "still serving")
	resp.Body.Close()
	// Its own telemetry on loopback: the receivers' counts, even with nothing to report.
	own := scrapeUntil(t, telemetry, nil)
	assert.Contains(t, own, `otelcol_receiver_accepted_metric_points{receiver="rnic"`)
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "No RDMA ports found"), out)
	assert.Equal(t, 1, strings.Count(out, "no usable uncore"), out)
	assert.Equal(t, 1, strings.Count(out, "No GPU metrics"), out)
	assert.NotContains(t, out, "\terror\t")
	assert.NotContains(t, out, "\twarn\t")
}

// TestShippedConfigsValidate runs the collector's own `validate` command on the default config and
// every example, so that a renamed component or a bad key in a shipped file fails here.
func TestShippedConfigsValidate(t *testing.T) {
	bin := collectorBinary(t)
	configs, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "config.yaml"))
	require.NoError(t, err)
	configs = append(configs, "config.yaml")
	for _, cfg := range configs {
		t.Run(cfg, func(t *testing.T) {
			cmd := exec.Command(bin, "validate", "--config", cfg)
			cmd.Env = append(os.Environ(), "PROM_RW_URL=http://127.0.0.1:9/api/v1/write",
				"OTLP_ENDPOINT=http://127.0.0.1:9", "OTLP_TOKEN=test", "HOSTNAME=node1")
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}
}

// rnicTopologyConfig runs the rnic receiver alone on root every 500 ms with every GPU-NIC pair
// reported (topology.all_pairs; by default only PIX/PXB and nearest pairs), served in Prometheus
// format on addr.
func rnicTopologyConfig(root, addr string) string {
	return fmt.Sprintf(`
receivers:
  rnic:
    collection_interval: 500ms
    root_path: %s
    ethtool: {enabled: false}
    topology: {all_pairs: true}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, root, addr)
}

// TestCollectorServesTopology: the built collector on a fixture node where nvidia-peermem is not
// loaded and one pair's switch ports redirect peer traffic (receiver/rnicreceiver/testdata/topology/nopeermem),
// with every GPU-NIC pair reported (rnicTopologyConfig).
func TestCollectorServesTopology(t *testing.T) {
	bin := collectorBinary(t)
	addr := freeAddr(t)
	root, err := filepath.Abs(filepath.Join("..", "..", "receiver", "rnicreceiver", "testdata", "topology", "nopeermem"))
	require.NoError(t, err)
	startCollector(t, bin, rnicTopologyConfig(root, addr))
	scrapeUntil(t, addr, []string{
		`rnic_topology_gpu_distance{device="mlx5_0",pcie_path="PIX",gpu_pci_bus_id="0000:13:00.0",pci_bus_id="0000:14:00.0"} 1`,
		`rnic_topology_gpu_distance{gpu_pci_bus_id="0000:13:00.0",device="mlx5_1",pcie_path="NODE"} 4`,
		`rnic_topology_peer_memory{mechanism="nvidia_peermem"} 0`,
		`rnic_topology_acs_redirect{gpu_pci_bus_id="0000:33:00.0",device="mlx5_1"} 1`,
		`rnic_topology_gpudirect_ready{gpu_pci_bus_id="0000:13:00.0",device="mlx5_0"} 0`,
		`rnic_topology_iommu{device="mlx5_1",iommu_mode="translated"} 1`,
		`rnic_topology_link_width{device="mlx5_0",pcie_link_bound="current"} 16`,
	})
}

// TestCollectorServesGraceTopology (#25): the built collector on a two-superchip Grace node's PCI
// tree as Linux lays it out (testfs.GraceNode: every root port its own host bridge and PCI
// segment, all with bus 00; the GPUs on segments 0009 and 0019, the ConnectX-7s on 0000 and 0010,
// one Grace socket each). The pairs of one socket are NODE (different host bridges, never PHB
// for sharing bus number 00), the pairs across sockets SYS, and each GPU's nearest NIC is its own
// socket's.
func TestCollectorServesGraceTopology(t *testing.T) {
	bin := collectorBinary(t)
	addr := freeAddr(t)
	root := t.TempDir()
	testfs.WritePCINode(t, root, testfs.GraceNode(true))
	startCollector(t, bin, rnicTopologyConfig(root, addr))
	body := scrapeUntil(t, addr, []string{
		`rnic_topology_gpu_distance{device="mlx5_0",gpu_pci_bus_id="0009:01:00.0",pci_bus_id="0000:01:00.0",pcie_path="NODE"} 4`,
		`rnic_topology_gpu_distance{device="mlx5_1",gpu_pci_bus_id="0019:01:00.0",pci_bus_id="0010:01:00.0",pcie_path="NODE"} 4`,
		`rnic_topology_gpu_distance{device="mlx5_1",gpu_pci_bus_id="0009:01:00.0",pcie_path="SYS"} 5`,
		`rnic_topology_gpu_distance{device="mlx5_0",gpu_pci_bus_id="0019:01:00.0",pcie_path="SYS"} 5`,
		`rnic_topology_nearest_rnic{device="mlx5_0",gpu_pci_bus_id="0009:01:00.0",pcie_path="NODE"} 4`,
		`rnic_topology_nearest_rnic{device="mlx5_1",gpu_pci_bus_id="0019:01:00.0",pcie_path="NODE"} 4`,
	})
	assert.Len(t, sampleValues(body, "rnic_topology_gpu_distance"), 4, "two GPUs x two NICs")
	assert.Len(t, sampleValues(body, "rnic_topology_nearest_rnic"), 2, "one nearest NIC per GPU")
}

// TestCollectorReloadsOnSIGHUP: the packaged unit's ExecReload sends SIGHUP
// (packaging/otelcol-iclens.service). The collector (otelcol/collector.go, Run: a SIGHUP on its
// signals channel calls reloadConfiguration) must re-read its configuration file and keep
// running: here the file moves the Prometheus exporter to another port, and after the signal the
// same process serves the rnic fixture there and no longer on the first.
func TestCollectorReloadsOnSIGHUP(t *testing.T) {
	bin := collectorBinary(t)
	root := t.TempDir()
	testfs.CopyTree(t, filepath.Join("..", "..", "receiver", "rnicreceiver", "testdata", "synthetic"), root)
	config := func(addr string) []byte { return []byte(rnicConfigEvery("500ms", root, addr, "")) }
	before, after := freeAddr(t), freeAddr(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, config(before), 0o644))
	logs := &syncbuf.Buffer{}
	p := runCollector(t, bin, []string{"--config", cfgPath}, nil, logs)
	sample := `rnic_port_state{device="mlx5_bond_0/1"} 4`
	scrapeUntil(t, before, []string{sample})

	require.NoError(t, os.WriteFile(cfgPath, config(after), 0o644))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	scrapeUntil(t, after, []string{sample})
	_, err := http.Get("http://" + before + "/metrics")
	assert.Error(t, err, "the first endpoint is closed after the reload")
	select {
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("the collector exited on SIGHUP: %v", err)
	default:
	}
	assert.Contains(t, logs.String(), `"signal": "hangup"`, "the collector says it got the signal")
	assert.NoError(t, p.stop(waitExit), "a clean exit on SIGTERM after the reload")
}
