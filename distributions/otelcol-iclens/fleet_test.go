package otelcoliclens_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// fleetDir is a fixture node of the rnic receiver's tests (internal/testfs/fleet.go writes them;
// their up-to-date tests keep them equal to that code).
func fleetDir(t *testing.T, parts ...string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(append([]string{"..", "..", "receiver", "rnicreceiver", "testdata"}, parts...)...))
	require.NoError(t, err)
	return p
}

// writeReplay turns a fixture node into a recording whose every scrape fails the given reads with
// the given errno and reports the given ethtool statistics (internal/recording/FORMAT.md): what a
// file tree cannot express, a recording can (a read that fails with EINVAL, driver statistics).
//
// Its first scrape reads the fixture as it is: every series' baseline (metadata/start-time.md).
// The later ones read every counter grown by its own value (testfs.GrowCounters, each ethtool
// statistic doubled), so the replay serves the fixture's values as counted since the first
// scrape. It is not to be looped: at the start of a lap the counters go back to their first
// values, a reset, after which the series report the raw readings.
func writeReplay(t *testing.T, root string, errs map[string]string, sample recording.RNICSample) string {
	t.Helper()
	tree, err := recording.Snapshot(root, []string{"sys"}, nil)
	require.NoError(t, err)
	grownRoot := t.TempDir()
	testfs.CopyTree(t, root, grownRoot)
	grownFiles := testfs.GrowCounters(t, grownRoot)
	grown := recording.RNICSample{Ethtool: map[string]map[string]uint64{}, EthtoolDrivers: sample.EthtoolDrivers}
	for nd, stats := range sample.Ethtool {
		grown.Ethtool[nd] = map[string]uint64{}
		for k, v := range stats {
			grown.Ethtool[nd][k] = 2 * v
		}
	}
	file := filepath.Join(t.TempDir(), filepath.Base(root)+".jsonl")
	w, err := recording.Create(file, recording.Header{Receiver: "rnic", Interval: recording.Duration(500 * time.Millisecond), Note: "fleet fixture " + filepath.Base(root)})
	require.NoError(t, err)
	t0 := time.Now().UTC()
	require.NoError(t, w.Write(recording.Record{Time: t0, Tree: tree}))
	for i := range 4 {
		files, smp := grownFiles, grown
		if i == 0 {
			files, smp = map[string]string{}, sample
		}
		b, err := json.Marshal(smp)
		require.NoError(t, err)
		require.NoError(t, w.Write(recording.Record{Time: t0.Add(time.Duration(i) * 500 * time.Millisecond), Files: files, Errors: errs, Sample: b}))
	}
	require.NoError(t, w.Close())
	return file
}

// fleetCopy copies a fixture node for a collector to read, so that the test can grow its counters.
func fleetCopy(t *testing.T, parts ...string) string {
	t.Helper()
	root := t.TempDir()
	testfs.CopyTree(t, fleetDir(t, parts...), root)
	return root
}

// TestCollectorServesFleets runs one collector with an rnic receiver per fleet node and checks
// what its Prometheus exporter serves for each: Broadcom bnxt_re with PMA reads failing EINVAL
// (replayed) and a bnxt_re VF, Intel E810 irdma before 6.16 and an IPU's GEN_3 on 6.16, AWS EFA,
// node_exporter's InfiniBand fixture, a BlueField-3 with its slot link trained down, an MI300X
// next to a ConnectX-7, an mlx5 RoCE LAG with its bond members' PFC counters (replayed),
// mlx5 switchdev, an XDR multi-plane HCA, compat devices of a pod's namespace, a DGX H100-like
// node and an HGX board behind iommu=pt, read as root and unprivileged.
func TestCollectorServesFleets(t *testing.T) {
	bin := collectorBinary(t)
	addr := freeAddr(t)

	pma := "sys/class/infiniband/bnxt_re0/ports/1/counters/"
	bnxt := writeReplay(t, fleetDir(t, "fleet", "broadcom"), map[string]string{pma + "port_xmit_data": "EINVAL", pma + "port_rcv_data": "EINVAL"},
		recording.RNICSample{
			Ethtool:        map[string]map[string]uint64{"ens2f0np0": {"rx_pfc_ena_frames_pri3": 11, "tx_pause_frames": 14}},
			EthtoolDrivers: map[string]string{"ens2f0np0": "bnxt_en", "ens2f1np1": "bnxt_en"},
		})
	lag := writeReplay(t, fleetDir(t, "fleet", "lag"), nil, recording.RNICSample{
		Ethtool: map[string]map[string]uint64{
			"ens1f0np0": {"rx_prio3_pause": 120, "rx_global_pause_duration": 900},
			"ens1f1np1": {"rx_prio3_pause": 30},
		},
		EthtoolDrivers: map[string]string{"ens1f0np0": "mlx5_core", "ens1f1np1": "mlx5_core"},
	})

	irdma, switchdev, multiplane := fleetCopy(t, "fleet", "intel"), fleetCopy(t, "fleet", "switchdev"), fleetCopy(t, "fleet", "multiplane")
	ipu, efa, nodeExporter := fleetCopy(t, "fleet", "ipu"), fleetCopy(t, "fleet", "efa"), fleetCopy(t, "node_exporter")

	receivers := map[string]string{
		"rnic/bnxt":         fmt.Sprintf("recording: {replay: %s}", bnxt),
		"rnic/lag":          fmt.Sprintf("recording: {replay: %s}\n    metrics: {rnic.pause.duration: {enabled: true}}", lag),
		"rnic/irdma":        "root_path: " + irdma,
		"rnic/switchdev":    "root_path: " + switchdev,
		"rnic/multiplane":   "root_path: " + multiplane,
		"rnic/netns":        "root_path: " + fleetDir(t, "fleet", "netns"),
		"rnic/dgx":          "root_path: " + fleetDir(t, "topology", "dgx-h100"),
		"rnic/hgx":          "root_path: " + fleetDir(t, "topology", "hgx-iommu-pt"),
		"rnic/unprivileged": "root_path: " + fleetDir(t, "topology", "hgx-unprivileged"),
		"rnic/ipu":          "root_path: " + ipu,
		"rnic/efa":          "root_path: " + efa,
		"rnic/nodeexporter": "root_path: " + nodeExporter,
		"rnic/bf3":          "root_path: " + fleetDir(t, "topology", "bf3-slot-x8"),
		"rnic/mi300x":       "root_path: " + fleetDir(t, "topology", "mi300x"),
	}
	// One pipeline per node, whose resource processor names the node (host_name in Prometheus):
	// the nodes share device names (mlx5_0 is on four of them).
	var recv, procs, pipes strings.Builder
	for _, name := range slices.Sorted(maps.Keys(receivers)) {
		node := strings.TrimPrefix(name, "rnic/")
		// slow_interval 1s: the grown error and transport counters are read again within a second.
		fmt.Fprintf(&recv, "  %s:\n    collection_interval: 500ms\n    slow_interval: 1s\n    ethtool: {enabled: false}\n    %s\n", name, receivers[name])
		fmt.Fprintf(&procs, "  resource/%s:\n    attributes: [{key: host.name, value: %s, action: insert}]\n", node, node)
		fmt.Fprintf(&pipes, "    metrics/%s: {receivers: [%s], processors: [resource/%s], exporters: [prometheus]}\n", node, name, node)
	}
	cfg := fmt.Sprintf(`receivers:
%sprocessors:
%sexporters:
  prometheus:
    endpoint: %s
    resource_to_telemetry_conversion: {enabled: true}
service:
  pipelines:
%s  telemetry: {metrics: {level: none}}
`, recv.String(), procs.String(), addr, pipes.String())
	logs := startCollector(t, bin, cfg)

	// The nodes read from a tree serve their baselines (metadata/start-time.md), then every counter
	// grows by its own value (testfs.GrowCounters): what the collector serves next is the fixture's
	// values, counted since. The replays grow their own after their first scrape (writeReplay).
	scrapeUntil(t, addr, []string{
		`interconnect_io_bytes_total{host_name="irdma",component="rnic",device="irdma0/1",direction="receive"} 0`,
		`rnic_roce_cnp_total{host_name="irdma",device="irdma0/1",counter="cnpSent"} 0`,
		`rnic_transport_events_total{host_name="irdma",device="irdma1/1",counter="tcpRetransSegs"} 0`,
		`rnic_transport_events_total{host_name="ipu",device="irdma0/1",counter="Nak Sequence Error"} 0`,
		`rnic_transport_events_total{host_name="efa",device="rdmap80s0/1",counter="impaired_remote_conn_events"} 0`,
		`rnic_packets_total{host_name="nodeexporter",device="mlx4_0/1",direction="receive"} 0`,
		`rnic_roce_cnp_total{host_name="switchdev",device="mlx5_0",counter="np_cnp_sent"} 0`,
		`rnic_transport_events_total{host_name="switchdev",device="mlx5_0/3",counter="out_of_sequence"} 0`,
		`interconnect_io_bytes_total{host_name="multiplane",component="rnic",device="mlx5_0/1",direction="transmit",pci_bus_id="0000:0b:00.0"} 0`,
	})
	for _, root := range []string{irdma, switchdev, multiplane, ipu, efa, nodeExporter} {
		testfs.GrowCounters(t, root)
	}
	scrapeUntil(t, addr, []string{
		// bnxt_re0: PMA unreadable (EINVAL), bytes from the RoCE-only hw_counters; bnxt_re1: PMA x4.
		`interconnect_io_bytes_total{host_name="bnxt",component="rnic",device="bnxt_re0/1",direction="transmit"} 6.5e+12`,
		`interconnect_io_bytes_total{host_name="bnxt",component="rnic",device="bnxt_re1/1",direction="transmit"} 1.2e+10`,
		`rnic_roce_cnp_total{host_name="bnxt",device="bnxt_re0/1",counter="rx_cnp_pkts"} 34`,
		`rnic_transport_events_total{host_name="bnxt",device="bnxt_re0/1",counter="to_retransmits"} 17`,
		`rnic_pfc_pause_frames_total{host_name="bnxt",device="ens2f0np0",direction="receive",priority="3"} 11`,
		`rnic_pause_frames_total{host_name="bnxt",device="ens2f0np0",direction="transmit"} 14`,
		// bnxt_re2, a VF: its RoCE-only counters stay 0 (bnxt_re_ib_get_hw_stats), tx_bytes counts.
		`interconnect_io_bytes_total{host_name="bnxt",component="rnic",device="bnxt_re2/1",direction="transmit"} 4e+09`,
		// irdma: IPv4 + IPv6 octets; E810 before 6.16 prints tcpRetransSegs; GEN_3 on 6.16 names with spaces.
		`interconnect_io_bytes_total{host_name="irdma",component="rnic",device="irdma0/1",direction="receive"} 1e+12`,
		`rnic_roce_cnp_total{host_name="irdma",device="irdma0/1",counter="cnpSent"} 63`,
		`rnic_transport_events_total{host_name="irdma",device="irdma1/1",counter="tcpRetransSegs"} 11`,
		`rnic_transport_events_total{host_name="ipu",device="irdma0/1",counter="Nak Sequence Error"} 8`,
		`rnic_transport_events_total{host_name="ipu",device="irdma0/1",counter="RetransSegs"} 11`,
		// EFA: plain bytes, SRD path events and drops.
		`interconnect_io_bytes_total{host_name="efa",component="rnic",device="rdmap80s0/1",direction="transmit"} 1.8e+10`,
		`rnic_transport_events_total{host_name="efa",device="rdmap80s0/1",counter="impaired_remote_conn_events"} 10`,
		`rnic_transport_errors_total{host_name="efa",device="rdmap80s0/1",counter="rx_drops"} 6`,
		`rnic_operation_io_bytes_total{host_name="efa",device="rdmap80s0/1",operation="rdma_write",direction="transmit"} 8e+09`,
		// node_exporter's fixture: the numbers of its e2e-output.txt (packets from the extended
		// table, not counters_ext's 0), the rate x0.8 for 8b/10b, SDR unnamed included.
		`rnic_packets_total{host_name="nodeexporter",device="mlx4_0/1",direction="receive"} 6.825908347e+09`,
		`interconnect_io_bytes_total{host_name="nodeexporter",component="rnic",device="mlx4_0/1",direction="transmit"} 1.493376e+07`,
		`rnic_port_rate_bytes_per_second{host_name="nodeexporter",device="i40iw0/1"} 1e+09`,
		// BlueField-3 whose slot link trained to x8 behind its internal switch: degraded; the
		// ConnectX-7 beside it is not. MI300X with amdgpu's dma-buf: ready.
		`rnic_topology_link_degraded{host_name="bf3",device="mlx5_1"} 1`,
		`rnic_topology_link_degraded{host_name="bf3",device="mlx5_0"} 0`,
		`rnic_topology_gpudirect_ready{host_name="mi300x",gpu_pci_bus_id="0000:13:00.0",device="mlx5_0",gpudirect_reason="ready"} 1`,
		// RoCE LAG: PFC per physical member, none for the bond.
		`rnic_pfc_pause_frames_total{host_name="lag",device="ens1f0np0",direction="receive",priority="3"} 120`,
		`rnic_pfc_pause_frames_total{host_name="lag",device="ens1f1np1",direction="receive",priority="3"} 30`,
		`rnic_pause_duration_microseconds_total{host_name="lag",device="ens1f0np0",direction="receive"} 900`,
		`interconnect_io_bytes_total{host_name="lag",component="netdev",device="bond0",direction="transmit"} 4000`,
		// switchdev: device-level congestion under the device name, vport_ names per representor.
		`rnic_roce_cnp_total{host_name="switchdev",device="mlx5_0",counter="np_cnp_sent"} 500`,
		`rnic_transport_events_total{host_name="switchdev",device="mlx5_0/3",counter="out_of_sequence"} 2`,
		// multi-plane: one byte series for the function.
		`interconnect_io_bytes_total{host_name="multiplane",component="rnic",device="mlx5_0/1",direction="transmit",pci_bus_id="0000:0b:00.0"} 4e+06`,
		`rnic_port_state{host_name="multiplane",device="smi1/4"} 4`,
		`rnic_port_info{host_name="multiplane",device="smi1/1",plane="true"} 1`,
		// DGX H100: real compute NIC names and IPoIB netdevs, each GPU's PIX NIC ready.
		`rnic_port_info{host_name="dgx",device="mlx5_11/1",netdev="ibp206s0",link_layer="InfiniBand"} 1`,
		`rnic_topology_gpudirect_ready{host_name="dgx",gpu_pci_bus_id="0000:cf:00.0",device="mlx5_11",gpudirect_reason="ready"} 1`,
		`rnic_topology_nearest_rnic{host_name="dgx",gpu_pci_bus_id="0000:41:00.0",device="mlx5_3",pcie_path="PIX"} 1`,
		// HGX behind iommu=pt: redirect; unprivileged: unknown, never ready.
		`rnic_topology_gpudirect_ready{host_name="hgx",gpu_pci_bus_id="0000:13:00.0",device="mlx5_0",gpudirect_reason="acs_redirect"} 0`,
		`rnic_topology_nearest_rnic{host_name="hgx",gpu_pci_bus_id="0000:93:00.0",device="mlx5_2",pcie_path="PIX"} 1`,
		`rnic_topology_gpudirect_ready{host_name="unprivileged",gpu_pci_bus_id="0000:13:00.0",device="mlx5_8",gpudirect_reason="acs_unknown"} -1`,
	})
	body := scrapeUntil(t, addr, []string{`rnic_port_state{host_name="netns",device="mlx5_1/1"} 4`})
	assert.NotContains(t, body, `rnic_pfc_pause_frames_total{device="bond0"`)
	assert.NotContains(t, body, `device="smi1/1",direction="transmit"`)
	assert.NotContains(t, body, `gpudirect_reason="acs_unknown"} 1`)
	assert.Contains(t, logs.String(), "no counters/ or hw_counters/ directories", "the compat-namespace node warns")
}
