package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// uncoreEvent is one counter a replayed cpuuncore receiver reads, and what it adds per sample.
type uncoreEvent struct {
	cpu     int
	pmu     string
	config  uint64
	config1 uint64
	step    uint64
}

// writeUncoreRecording writes a cpuuncore recording (internal/recording/FORMAT.md) of the fixture
// host tree under receiver/cpuuncorereceiver/testdata/<fixture> with samples scrapes one interval
// apart, each event counting its step per scrape.
//
// What a test waits for is the value the series settle at, samples x step.
// The perf counters count from 0 at their open (metadata/start-time.md), so the first scrape
// already serves one step; the replay does not loop, so its last sample stays. The values in
// between are transient: a scrape that comes late on a busy machine reads the sample due then
// (recording.Player.Next) and skips the ones before it, so a test waiting for the second sample's
// value could wait forever (served 3 steps beside stress-ng, where 2 were awaited).
func writeUncoreRecording(t *testing.T, fixture string, samples int, events []uncoreEvent) string {
	t.Helper()
	tree, err := recording.Snapshot(filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", fixture), []string{"sys", "proc"}, nil)
	require.NoError(t, err)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), fixture+"-cpuuncore.jsonl")
	w, err := recording.Create(path, recording.Header{Receiver: "cpuuncore", Host: fixture, Created: start,
		Interval: recording.Duration(time.Second), Note: "replayed " + fixture + " fixture"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: start, Tree: tree}))
	for i := 1; i <= samples; i++ {
		var s recording.PerfSample
		ns := uint64(i) * uint64(time.Second)
		for _, e := range events {
			s.Perf = append(s.Perf, recording.PerfReading{CPU: e.cpu, PMU: e.pmu, Config: e.config, Config1: e.config1,
				Value: uint64(i) * e.step, Enabled: ns, Running: ns})
		}
		b, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, w.Write(recording.Record{Time: start.Add(time.Duration(i) * time.Second), Sample: b}))
	}
	require.NoError(t, w.Close())
	return path
}

// replayConfig runs the cpuuncore receiver on a replay, one recorded scrape a second, into the
// Prometheus exporter at addr.
func replayConfig(rec, addr string) string {
	return fmt.Sprintf(`
receivers:
  cpuuncore:
    collection_interval: 1s
    initial_delay: 0s
    recording: {replay: %s}
exporters:
  prometheus:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [cpuuncore], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
`, rec, addr)
}

// TestCollectorServesGraceReplay: the built collector replays a recording of the GH200 fixture
// (receiver/cpuuncorereceiver/testdata/gh200: arm64 cpuinfo and the NVIDIA CoreSight PMUs laid out
// as drivers/perf/arm_cspmu/arm_cspmu.c and nvidia_cspmu.c lay them out) and serves host memory
// and CPU PCIe bytes for the Grace socket. Whatever GOARCH the collector was built for, the CPU
// is identified from the recorded cpuinfo. The series settle at the last sample's three steps
// (see writeUncoreRecording): cpu_memory read = 3 x (1000 cmem_rd_data x 32 B + 700 B of NVLink-C2C0
// rd_bytes_loc), write = 3 x (4096 + 300) B, cpu_pcie transmit = 3 x (10 + 20) B of
// rd_bytes_loc/rem, receive = 3 x (30 + 40) B of wr_bytes_loc/rem. On main the receiver found no
// PMU it knew here and served nothing.
func TestCollectorServesGraceReplay(t *testing.T) {
	bin := collectorBinary(t)
	rec := writeUncoreRecording(t, "gh200", 3, []uncoreEvent{
		{0, "nvidia_scf_pmu_0", 0x1a5, 0, 1000}, // cmem_rd_data
		{0, "nvidia_scf_pmu_0", 0x1db, 0, 4096}, // cmem_wr_total_bytes
		{0, "nvidia_nvlink_c2c0_pmu_0", 0x0, 0, 700},
		{0, "nvidia_nvlink_c2c0_pmu_0", 0x2, 0, 300},
		{0, "nvidia_pcie_pmu_0", 0x0, 0, 10},
		{0, "nvidia_pcie_pmu_0", 0x1, 0, 20},
		{0, "nvidia_pcie_pmu_0", 0x2, 0, 30},
		{0, "nvidia_pcie_pmu_0", 0x3, 0, 40},
	})
	addr := freeAddr(t)
	logs := startCollector(t, bin, replayConfig(rec, addr))
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="cpu_memory",device="socket0/cmem",direction="read",numa_node="0"} 98100`,
		`interconnect_io_bytes_total{component="cpu_memory",device="socket0/cmem",direction="write",numa_node="0"} 13188`,
		`interconnect_io_bytes_total{component="cpu_pcie",device="socket0/pcie",direction="transmit",numa_node="0"} 90`,
		`interconnect_io_bytes_total{component="cpu_pcie",device="socket0/pcie",direction="receive",numa_node="0"} 210`,
	})
	assert.Contains(t, logs.String(), `"platform": "grace"`, "identified from the recorded arm64 cpuinfo")
	assert.NotContains(t, logs.String(), "Cannot identify the CPU")
}

// TestCollectorServesXeonMaxHBMAndPeerWrites: the built collector replays a recording of the
// Xeon Max fixture (receiver/cpuuncorereceiver/testdata/spr_hbm: the spr host of uncore_snbep.c
// plus the uncore_hbm_N PMUs of f8a86a9bb5f7) and serves the HBM controllers' bytes as their own
// socketN/hbm series (UNC_MCHBM_CAS_COUNT.RD, 64 B a CAS assumed) and the peer-to-peer writes into
// a stack's devices in its transmit (UNC_IIO_DATA_REQ_BY_CPU.PEER_WRITE, 4 B a count), settled
// at the last sample's three steps (see writeUncoreRecording). Every event the receiver opens is in the
// recording; the ones named here count, the rest stay at 0.
// On main neither the HBM nor the peer events were opened, so neither series carried these bytes.
func TestCollectorServesXeonMaxHBMAndPeerWrites(t *testing.T) {
	bin := collectorBinary(t)
	var events []uncoreEvent
	step := map[string]uint64{"uncore_hbm_3@56:0xcf05": 1000, "uncore_imc_0@0:0xcf05": 7, "uncore_iio_1@0:0x70ff0000002c0": 5}
	add := func(pmu string, configs ...uint64) {
		for _, cpu := range []int{0, 56} {
			for _, c := range configs {
				events = append(events, uncoreEvent{cpu: cpu, pmu: pmu, config: c, step: step[fmt.Sprintf("%s@%d:%#x", pmu, cpu, c)]})
			}
		}
	}
	for i := range 8 {
		add(fmt.Sprintf("uncore_imc_%d", i), 0xcf05, 0xf005) // cas_count_read/write, event 0x05
		add(fmt.Sprintf("uncore_hbm_%d", i), 0xcf05, 0xf005) // UNC_MCHBM_CAS_COUNT.RD/WR
	}
	for i := range 12 {
		add(fmt.Sprintf("uncore_iio_free_running_%d", i), 0x20ff, 0x21ff, 0x22ff, 0x23ff, 0x24ff, 0x25ff, 0x26ff, 0x27ff) // bw_in_port0..7
		// DATA_REQ_OF_CPU.MEM_READ, DATA_REQ_BY_CPU.MEM_WRITE and .PEER_WRITE, ALL_PARTS (ch_mask 0xff, fc_mask 0x7)
		add(fmt.Sprintf("uncore_iio_%d", i), 0x70ff000000483, 0x70ff0000001c0, 0x70ff0000002c0)
	}
	rec := writeUncoreRecording(t, "spr_hbm", 3, events)
	addr := freeAddr(t)
	logs := startCollector(t, bin, replayConfig(rec, addr))
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{component="cpu_memory",device="socket1/hbm",direction="read",numa_node="1"} 192000`,
		`interconnect_io_bytes_total{component="cpu_memory",device="socket0/imc",direction="read",numa_node="0"} 1344`,
		`interconnect_io_bytes_total{component="cpu_pcie",device="socket0/iio1",direction="transmit",numa_node="0"} 60`,
	})
	assert.NotContains(t, logs.String(), "Cannot use part of the uncore", "every opened event was recorded")
}
