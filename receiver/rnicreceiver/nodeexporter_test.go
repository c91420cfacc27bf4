//go:build linux

package rnicreceiver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// The differential test against node_exporter. testdata/node_exporter is written by
// testfs.WriteRDMANode from testfs.NodeExporterRDMANode: the devices, files and values of the
// InfiniBand part of prometheus/node_exporter's collector/fixtures/sys.ttar (a7dcc3a01545).
// nodeExporterReports is what node_exporter serves for that tree, transcribed from its
// collector/fixtures/e2e-output.txt at the same commit. The receiver reads the tree and must serve
// the same numbers, in its own units, except where the table says why not.

// TestNodeExporterFixtureUpToDate keeps testdata/node_exporter equal to what the tree writer
// produces. `go test -run TestNodeExporterFixtureUpToDate -update` rewrites it.
func TestNodeExporterFixtureUpToDate(t *testing.T) {
	fixtureUpToDate(t, "node_exporter", testfs.NodeExporterRDMANode(), "TestNodeExporterFixtureUpToDate")
}

// nodeExporterPoint is one line of node_exporter's e2e-output.txt and the receiver's point that
// stands for it: metric, attributes, and the factor from node_exporter's value to the receiver's.
type nodeExporterPoint struct {
	line   string // node_exporter's series, as e2e-output.txt prints it
	value  float64
	metric string
	attrs  map[string]any
	// factor converts node_exporter's value into the receiver's: 1, or 0.8 for the rate of an
	// 8b/10b-coded InfiniBand link (node_exporter serves the signalling rate, the receiver the
	// data rate, README "Port rate").
	factor float64
}

// nodeExporterReports are the InfiniBand lines of e2e-output.txt whose counters are comparable.
// Counters are compared as read, not as node_exporter's absolute totals: the receiver counts
// from its first reading (metadata/start-time.md), so the tree is grown by its own values
// (scrapeGrown) and the deltas must equal node_exporter's values.
var nodeExporterReports = []nodeExporterPoint{
	{`node_infiniband_port_data_received_bytes_total{device="mlx4_0",port="1"}`, 1.8527668e+07, "interconnect.io", rnicIO("mlx4_0/1", "receive"), 1},
	{`node_infiniband_port_data_transmitted_bytes_total{device="mlx4_0",port="1"}`, 1.493376e+07, "interconnect.io", rnicIO("mlx4_0/1", "transmit"), 1},
	// Port 2's counters/ (the extended table) reads 0 and node_exporter serves 0; its legacy
	// counters_ext copy (node_infiniband_legacy_*) is another device's view, not this port's.
	{`node_infiniband_port_data_received_bytes_total{device="mlx4_0",port="2"}`, 0, "interconnect.io", rnicIO("mlx4_0/2", "receive"), 1},
	{`node_infiniband_port_data_transmitted_bytes_total{device="mlx4_0",port="2"}`, 0, "interconnect.io", rnicIO("mlx4_0/2", "transmit"), 1},
	{`node_infiniband_port_packets_received_total{device="mlx4_0",port="1"}`, 6.825908347e+09, "rnic.packets", map[string]any{"device": "mlx4_0/1", "direction": "receive"}, 1},
	{`node_infiniband_port_packets_transmitted_total{device="mlx4_0",port="1"}`, 6.235865e+06, "rnic.packets", map[string]any{"device": "mlx4_0/1", "direction": "transmit"}, 1},
	{`node_infiniband_port_discards_transmitted_total{device="mlx4_0",port="1"}`, 5, "rnic.port.errors", map[string]any{"device": "mlx4_0/1", "counter": "port_xmit_discards"}, 1},
	{`node_infiniband_link_downed_total{device="mlx4_0",port="2"}`, 0, "rnic.port.errors", map[string]any{"device": "mlx4_0/2", "counter": "link_downed"}, 1},
	{`node_infiniband_state_id{device="i40iw0",port="1"}`, 4, "rnic.port.state", map[string]any{"device": "i40iw0/1"}, 1},
	{`node_infiniband_state_id{device="mlx4_0",port="2"}`, 4, "rnic.port.state", map[string]any{"device": "mlx4_0/2"}, 1},
	{`node_infiniband_physical_state_id{device="mlx4_0",port="1"}`, 5, "rnic.port.physical_state", map[string]any{"device": "mlx4_0/1"}, 1},
	{`node_infiniband_rate_bytes_per_second{device="mlx4_0",port="1"}`, 5e+09, "rnic.port.rate", map[string]any{"device": "mlx4_0/1"}, 0.8},
	// "10 Gb/sec (4X)": SDR without its name, 8b/10b as well.
	{`node_infiniband_rate_bytes_per_second{device="i40iw0",port="1"}`, 1.25e+09, "rnic.port.rate", map[string]any{"device": "i40iw0/1"}, 0.8},
}

// TestSameNumbersAsNodeExporter reads node_exporter's fixture and compares every comparable line
// of its published output. node_exporter also serves port_transmit_wait 4294967295: the receiver
// flags that counter saturated (IBA 1.8 §16.1.3.5: it stopped at all ones) instead.
func TestSameNumbersAsNodeExporter(t *testing.T) {
	root := fixtureCopy(t, filepath.Join("testdata", "node_exporter"))
	s, _ := newTestScraper(t, root, nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	md, err := scrapeGrown(t, s, root)
	require.NoError(t, err)
	for _, p := range nodeExporterReports {
		// Both serve PMA data counters times 4 (octets, IBA PortCounters PortXmitData).
		want := int64(p.value * p.factor)
		got, ok := metrictest.Find(md, p.metric, p.attrs)
		if assert.True(t, ok, "%s: no %s %v", p.line, p.metric, p.attrs) {
			assert.Equal(t, want, got.IntValue(), "%s = %g in node_exporter", p.line, p.value)
		}
	}
	assert.Equal(t, int64(1), value(t, md, "rnic.counter.saturated", map[string]any{"device": "mlx4_0/1", "counter": "port_xmit_wait"}))
	for _, dev := range []string{"i40iw0", "mlx4_0"} {
		assert.Equal(t, map[string]string{"i40iw0": "0.2", "mlx4_0": "2.31.5050"}[dev], mustAttr(t, md, "rnic.port.info", dev+"/1", "fw_version"))
	}
}
