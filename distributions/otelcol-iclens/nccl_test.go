package otelcoliclens_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// TestCollectorServesNCCL runs the built collector's nccl receiver on the simulator's Inspector
// dumps (tools/simulate WriteNCCL: the 2.28 latest-snapshot model) and a RAS service on loopback
// (internal/fakeras, the client protocol of NVIDIA/nccl src/ras/client_support.cc), offsets kept
// in file_storage. It checks what the Prometheus exporter serves, stops the collector, lets the
// job write on, starts it again: the records written while it was down are read, none twice.
func TestCollectorServesNCCL(t *testing.T) {
	bin := collectorBinary(t)
	dir := t.TempDir()
	_, err := simulate.WriteNCCL(simulate.Options{Dir: dir, Interval: time.Second, Samples: 30})
	require.NoError(t, err)
	var c scenario.Case
	for _, k := range simulate.NCCLCases() {
		if k.Name == "tcp_fallback" {
			c = k
		}
	}
	dump := filepath.Join(dir, c.Name, "nccl")
	node1 := filepath.Join(dump, scenario.HostName(c, "node1")+"-pid4100.log")
	first, err := os.ReadFile(node1)
	require.NoError(t, err)
	records := strings.Count(string(first), "\n")
	require.Positive(t, records)

	ras, err := fakeras.Listen("127.0.0.1:0", "")
	require.NoError(t, err)
	defer ras.Close()
	ras.Set(simulate.RASStatus(c, 29, time.Second))

	storage := t.TempDir()
	addr := freeAddr(t)
	cfg := fmt.Sprintf(`
extensions:
  file_storage/nccl:
    directory: %s
receivers:
  nccl:
    collection_interval: 1s
    root_path: /
    inspector: {dump_dir: %s, poll_interval: 100ms, storage: file_storage/nccl}
    ras: {endpoint: "%s", timeout: 900ms}
exporters:
  prometheus:
    endpoint: %s
service:
  extensions: [file_storage/nccl]
  pipelines:
    metrics: {receivers: [nccl], exporters: [prometheus]}
  telemetry:
    metrics: {level: none}
`, storage, dump, ras.Addr(), addr)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))

	// host.name is a resource attribute: the Prometheus exporter puts it on target_info, so the
	// node's rank (node1 is rank 0) tells the series apart here.
	rank0 := `nccl_rank="0"`
	samples := fmt.Sprintf(`nccl_collective_samples_total{%s,nccl_collective="AllReduce",nccl_message_size=%q} %d`, rank0, scenario.MessageBucket, records)
	logs := &syncbuf.Buffer{}
	p := runCollector(t, bin, []string{"--config", cfgPath}, nil, logs)
	body := scrapeUntil(t, addr, []string{
		samples,
		`nccl_ras_up_ratio{} 1`,
		`nccl_ras_ranks{nccl_comm_size="2",rank_state="running"} 2`,
	})
	// The bus bandwidth of the socket transport (2.8 GB/s in the model) is the histogram's mean.
	count, ok := sampleValue(body, "nccl_collective_bus_bandwidth_gigabytes_per_second_count", rank0)
	require.True(t, ok, "the bus-bandwidth histogram is served:\n%s", body)
	sum, _ := sampleValue(body, "nccl_collective_bus_bandwidth_gigabytes_per_second_sum", rank0)
	assert.Equal(t, float64(records), count)
	assert.InDelta(t, 2.8, sum/count, 1e-4)
	for _, line := range strings.Split(body, "\n") {
		assert.NotContains(t, line, "coll_sn", "coll_sn never becomes a label")
	}
	require.NoError(t, p.stop(10*time.Second))

	// The job writes on while the collector is down.
	later := simulate.InspectorDump(c, 0, 40, time.Second, time.Time{})
	extra := strings.Split(strings.TrimSuffix(later, "\n"), "\n")[records:]
	require.NotEmpty(t, extra)
	f, err := os.OpenFile(node1, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(strings.Join(extra, "\n") + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	runCollector(t, bin, []string{"--config", cfgPath}, nil, logs)
	scrapeUntil(t, addr, []string{
		fmt.Sprintf(`nccl_collective_samples_total{%s,nccl_collective="AllReduce",nccl_message_size=%q} %d`, rank0, scenario.MessageBucket, len(extra)),
	})
}

// TestCollectorNCCLRASLogs: the built collector with the nccl receiver in a logs pipeline turns a
// rank that RAS (internal/fakeras, the STATUS of NVIDIA/nccl src/ras/client_support.cc) reports
// dead into one log record, delivered here by the debug exporter: the record names the
// communicator, the rank and both states. The wait is for that record, not a time.
func TestCollectorNCCLRASLogs(t *testing.T) {
	bin := collectorBinary(t)
	ras, err := fakeras.Listen("127.0.0.1:0", "")
	require.NoError(t, err)
	defer ras.Close()
	const comm = "0x7f8c00aa11"
	running := []fakeras.Rank{
		{Rank: 0, PID: 4100, Host: "10.0.0.1", Counts: map[string]uint64{"AllReduce": 10}},
		{Rank: 1, PID: 4200, Host: "10.0.0.2", Counts: map[string]uint64{"AllReduce": 10}},
	}
	ras.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 2, Ranks: running}}))

	cfg := fmt.Sprintf(`
receivers:
  nccl:
    collection_interval: 1s
    ras: {endpoint: "%s", timeout: 900ms}
exporters:
  debug: {verbosity: detailed}
service:
  pipelines:
    logs: {receivers: [nccl], exporters: [debug]}
  telemetry:
    metrics: {level: none}
`, ras.Addr())
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	logs := &syncbuf.Buffer{}
	runCollector(t, bin, []string{"--config", cfgPath}, nil, logs)
	// The receiver has seen the ranks running once it has been sent a STATUS (the Served count
	// rises after the document is written, so the receiver holds it).
	require.Eventually(t, func() bool { return ras.Served() >= 1 }, waitServed, 100*time.Millisecond,
		"the receiver asks RAS for its status")

	dead := []fakeras.Rank{running[0], {Rank: 1, PID: 4200, Host: "10.0.0.2", Missing: true, Dead: true}}
	ras.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 2, Ranks: dead}}))
	want := "NCCL rank 1 of communicator " + comm + ": running -> dead (10.0.0.2, pid 4200)"
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), want) }, waitLogged, 100*time.Millisecond,
		"a log record for the dead rank:\n%s", logs.String())
	out := logs.String()
	assert.Contains(t, out, "nccl.rank.state_change")
	assert.Contains(t, out, "nccl.rank.previous_state: Str(running)")
	assert.Equal(t, 1, strings.Count(out, want), "one record for one change")
	assert.NotContains(t, out, "\terror\t")
}
