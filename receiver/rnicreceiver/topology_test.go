package rnicreceiver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/internal/topology/topologytest"
)

// The topology metrics as the receiver emits them, on the whole-node fixtures of
// internal/topology/topologytest (kernel sysfs layout, testfs.WritePCINode) written into
// testdata/topology/<name>: `go test -run TestTopologyFixturesUpToDate -update` rewrites them.
// internal/topology's own tests cover the policy (paths, ACS, IOMMU, peer memory, readiness).

func TestTopologyFixturesUpToDate(t *testing.T) {
	for name, node := range topologytest.Nodes() {
		dir := filepath.Join("testdata", "topology", name)
		if *update {
			require.NoError(t, os.RemoveAll(dir))
			testfs.WritePCINode(t, dir, node)
			continue
		}
		fresh := t.TempDir()
		testfs.WritePCINode(t, fresh, node)
		require.Equal(t, snapshotTree(t, fresh), snapshotTree(t, dir), "testdata/topology/%s is stale: run go test -run TestTopologyFixturesUpToDate -update", name)
	}
}

func scrapeTopology(t *testing.T, name string, tweak func(*Config)) pmetric.Metrics {
	t.Helper()
	s, _ := newTestScraper(t, filepath.Join("testdata", "topology", name), tweak)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	return md
}

func allPairs(cfg *Config) { cfg.Topology.AllPairs = true }

// topoPoint is the one point of metric with the attributes want.
func topoPoint(t *testing.T, md pmetric.Metrics, metric string, want map[string]any) pmetric.NumberDataPoint {
	t.Helper()
	dp, ok := metrictest.Find(md, metric, want)
	require.True(t, ok, "no %s point with %v", metric, want)
	return dp
}

func topoValue(t *testing.T, md pmetric.Metrics, metric string, want map[string]any) int64 {
	t.Helper()
	return topoPoint(t, md, metric, want).IntValue()
}

func topoAttr(t *testing.T, md pmetric.Metrics, metric string, want map[string]any, attr string) any {
	t.Helper()
	return topoPoint(t, md, metric, want).Attributes().AsRaw()[attr]
}

// pair selects the series of a GPU (by PCI address) and a NIC.
func pair(gpu, nic string) map[string]any {
	return map[string]any{"gpu.pci.bus_id": gpu, "device": nic}
}

func mustPath(t *testing.T, md pmetric.Metrics, gpu, nic string) string {
	t.Helper()
	return topoAttr(t, md, "rnic.topology.gpu_distance", pair(gpu, nic), "pcie.path").(string)
}

func countPoints(md pmetric.Metrics, name string) int {
	return len(metrictest.Points(md, name))
}

var topologyMetrics = []string{"gpu_distance", "nearest_rnic", "acs_redirect", "gpudirect_ready", "iommu", "link.speed", "link.width", "link.degraded", "peer_memory"}

func topologySeries(md pmetric.Metrics) int {
	n := 0
	for _, m := range topologyMetrics {
		n += countPoints(md, "rnic.topology."+m)
	}
	return n
}

// dgxGPU is the PCI address of GPU i of the dgx fixture (bus 0x13 + 0x20 i).
func dgxGPU(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x13+0x20*i) }

func TestTopologyDGX(t *testing.T) {
	md := scrapeTopology(t, "dgx", allPairs)
	for i := range 8 {
		gpu, nic := dgxGPU(i), fmt.Sprintf("mlx5_%d", i)
		dp := topoPoint(t, md, "rnic.topology.gpu_distance", pair(gpu, nic))
		assert.Equal(t, int64(1), dp.IntValue())
		assert.Equal(t, "PIX", dp.Attributes().AsRaw()["pcie.path"])
		assert.Equal(t, fmt.Sprintf("0000:%02x:00.0", 0x14+0x20*i), dp.Attributes().AsRaw()["pci.bus_id"])
		assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu.pci.bus_id": gpu, "device": nic, "pcie.path": "PIX"}))
		assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.gpudirect_ready", pair(gpu, nic)))
		assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.acs_redirect", pair(gpu, nic)))
	}
	// Same socket, other host bridge: NODE; other socket: SYS.
	assert.Equal(t, "NODE", mustPath(t, md, dgxGPU(0), "mlx5_3"))
	assert.Equal(t, "SYS", mustPath(t, md, dgxGPU(0), "mlx5_4"))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.gpudirect_ready", pair(dgxGPU(0), "mlx5_4")))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "nvidia_peermem"}))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "dma_buf"}))
	// A GPU's IOMMU series is named by its PCI address.
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.iommu", map[string]any{"device": dgxGPU(3), "pci.bus_id": dgxGPU(3), "iommu.mode": "passthrough"}))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.iommu", map[string]any{"device": "mlx5_0", "pci.bus_id": "0000:14:00.0", "iommu.mode": "passthrough"}))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0", "pci.bus_id": "0000:14:00.0"}))
	assert.Equal(t, 64, countPoints(md, "rnic.topology.gpu_distance"), "one series per GPU-NIC pair")
}

// TestTopologyGPUsByBusID: on a node whose display-class functions come before the NVIDIA GPU in
// PCI order (the BMC's ASPEED VGA, an AMD Instinct), the GPU's topology series carry its PCI
// address, which is what the gpu receiver's gpu.info says for the GPU it calls gpu0 (DCGM GPU 0),
// and no ordinal name: an ordinal over display devices called the same GPU gpu1 here, so that
// gpu="gpu1" meant two different GPUs in the topology and in the gpu receiver's series.
func TestTopologyGPUsByBusID(t *testing.T) {
	md := scrapeTopology(t, "mixed", allPairs)
	const h100, mi210 = "0000:13:00.0", "0000:06:00.0"
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": h100, "device": "mlx5_0", "gpudirect.reason": "ready"}))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.acs_redirect", pair(h100, "mlx5_0")))
	assert.Equal(t, "PIX", mustPath(t, md, h100, "mlx5_0"))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu.pci.bus_id": h100, "device": "mlx5_0", "pcie.path": "PIX"}))
	assert.Equal(t, "NODE", mustPath(t, md, mi210, "mlx5_0"))
	absent := func(metric string, want map[string]any) {
		_, ok := metrictest.Find(md, metric, want)
		assert.False(t, ok, "%s %v", metric, want)
	}
	absent("rnic.topology.iommu", map[string]any{"pci.bus_id": "0000:02:00.0"}) // the BMC's VGA is no GPU
	ordinal := regexp.MustCompile(`^gpu[0-9]+$`)
	for _, m := range topologyMetrics {
		for _, dp := range metrictest.Points(md, "rnic.topology."+m) {
			a := dp.Attributes().AsRaw()
			assert.NotContains(t, a, "gpu", "rnic.topology.%s names no GPU by ordinal", m)
			assert.NotRegexp(t, ordinal, a["device"], "rnic.topology.%s", m)
		}
	}
	// Every pair series of a GPU carries its address.
	for _, m := range []string{"gpu_distance", "acs_redirect", "gpudirect_ready", "nearest_rnic"} {
		for _, dp := range metrictest.Points(md, "rnic.topology."+m) {
			assert.Contains(t, []any{h100, mi210}, dp.Attributes().AsRaw()["gpu.pci.bus_id"], m)
		}
	}
}

// TestTopologyLinks: link metrics are reported for RDMA NICs only; a GPU's link is the gpu
// receiver's (gpu.pcie.link.*). A GPU trained to x8 at 8 GT/s is still a ready PIX pair.
func TestTopologyLinks(t *testing.T) {
	md := scrapeTopology(t, "x8gen3", nil)
	for _, m := range []string{"link.speed", "link.width", "link.degraded"} {
		for _, dp := range metrictest.Points(md, "rnic.topology."+m) {
			assert.Equal(t, "mlx5_0", dp.Attributes().AsRaw()["device"], "rnic.topology.%s for NICs only", m)
		}
	}
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0"}))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.gpudirect_ready", pair("0000:13:00.0", "mlx5_0")))

	md = scrapeTopology(t, "nic-x8", nil)
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0"}))
	assert.Equal(t, int64(8), topoValue(t, md, "rnic.topology.link.width", map[string]any{"device": "mlx5_0", "pcie.link.bound": "current"}))
	assert.Equal(t, int64(16), topoValue(t, md, "rnic.topology.link.width", map[string]any{"device": "mlx5_0", "pcie.link.bound": "max"}))
	assert.Equal(t, 16.0, topoPoint(t, md, "rnic.topology.link.speed", map[string]any{"device": "mlx5_0", "pcie.link.bound": "current"}).DoubleValue())
	assert.Equal(t, 32.0, topoPoint(t, md, "rnic.topology.link.speed", map[string]any{"device": "mlx5_0", "pcie.link.bound": "max"}).DoubleValue())
}

// TestTopologyNotPerScrape: the PCI tree is read at discovery, not on every scrape.
func TestTopologyNotPerScrape(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "topology", "dgx"), nil)
	_, err := s.scrape(context.Background())
	require.NoError(t, err)
	var opened []string
	s.reader.OnOpen = func(p string) error {
		opened = append(opened, p)
		return nil
	}
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	for _, p := range opened {
		assert.NotContains(t, p, "link_speed")
		assert.NotContains(t, p, "numa_node")
	}
	assert.Equal(t, 8, countPoints(md, "rnic.topology.gpu_distance"), "still reported: by default the PIX/PXB and nearest pairs")
}

// TestTopologyReasons: the verdicts reach the metrics with their reason: an HGX board booted with
// iommu=pt whose switch ports redirect peer traffic (0, acs_redirect) and the same board read
// unprivileged (-1, acs_unknown, never 1); a miscabled node (0, its nearest NIC SYS); a VM without
// NUMA nodes (-1, path_unknown); a node without peer memory (0, no_peer_memory, both mechanisms 0).
func TestTopologyReasons(t *testing.T) {
	for _, c := range []struct {
		node, reason string
		ready, acs   int64
		pairs        int
	}{
		{"hgx-iommu-pt", "acs_redirect", 0, 1, 16},
		{"hgx-unprivileged", "acs_unknown", -1, -1, 16},
	} {
		md := scrapeTopology(t, c.node, nil)
		ready := metrictest.Points(md, "rnic.topology.gpudirect_ready")
		require.Len(t, ready, c.pairs, "%s: two PIX NICs per GPU", c.node)
		for _, dp := range ready {
			assert.Equal(t, c.ready, dp.IntValue(), c.node)
			assert.Equal(t, c.reason, dp.Attributes().AsRaw()["gpudirect.reason"], c.node)
		}
		assert.Equal(t, c.acs, topoValue(t, md, "rnic.topology.acs_redirect", pair("0000:13:00.0", "mlx5_0")), c.node)
	}
	md := scrapeTopology(t, "hgx-iommu-pt", nil)
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.iommu", map[string]any{"device": "0000:13:00.0", "iommu.mode": "passthrough"}))

	md = scrapeTopology(t, "miscabled", nil)
	assert.Equal(t, int64(5), topoValue(t, md, "rnic.topology.nearest_rnic", map[string]any{"gpu.pci.bus_id": "0000:13:00.0", "device": "mlx5_0", "pcie.path": "SYS", "pci.bus_id": "0000:91:00.0"}))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": "0000:13:00.0", "device": "mlx5_0", "gpudirect.reason": "pcie_path"}))

	md = scrapeTopology(t, "no-numa", nil)
	assert.Equal(t, "unknown", mustPath(t, md, "0000:13:00.0", "mlx5_0"))
	assert.Equal(t, int64(-1), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": "0000:13:00.0", "device": "mlx5_0", "gpudirect.reason": "path_unknown"}))

	md = scrapeTopology(t, "nopeermem", nil)
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "nvidia_peermem"}))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.peer_memory", map[string]any{"mechanism": "dma_buf"}))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": "0000:13:00.0", "device": "mlx5_0", "gpudirect.reason": "no_peer_memory"}))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.acs_redirect", pair("0000:33:00.0", "mlx5_1")))
	assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.iommu", map[string]any{"device": "mlx5_1", "iommu.mode": "translated"}))
}

// TestTopologyDGXH100: the DGX H100-like node with its real compute NIC names, IPoIB netdevs and
// storage NICs. Each GPU's pair is PIX and ready; the defaults report 8 pairs (each GPU's PIX NIC)
// instead of the full 8 x 12 matrix, and the node's topology series are counted here.
func TestTopologyDGXH100(t *testing.T) {
	md := scrapeTopology(t, "dgx-h100", nil)
	gpus := map[string]bool{}
	for _, c := range testfs.DGXComputeNICs {
		dp := topoPoint(t, md, "rnic.topology.nearest_rnic", map[string]any{"device": c.RDMA, "pcie.path": "PIX"})
		gpu := dp.Attributes().AsRaw()["gpu.pci.bus_id"].(string)
		gpus[gpu] = true
		assert.Equal(t, int64(1), dp.IntValue())
		assert.Equal(t, int64(1), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": gpu, "device": c.RDMA, "gpudirect.reason": "ready"}), gpu)
		assert.Equal(t, c.Netdev, mustAttr(t, md, "rnic.port.info", c.RDMA+"/1", "netdev"))
	}
	assert.Len(t, gpus, 8, "each compute NIC is the nearest of its own GPU")
	assert.Equal(t, "enp41s0f1np1", mustAttr(t, md, "rnic.port.info", "mlx5_2/1", "netdev"))
	assert.Equal(t, 8, countPoints(md, "rnic.topology.gpu_distance"))
	// Per node: 8 pairs x 3 pair metrics + 8 nearest + 8 GPUs x iommu + 12 NICs x (iommu, 2
	// speeds, 2 widths, degraded) + 2 peer-memory mechanisms. (GPU links are the gpu receiver's:
	// 8 x 5 series fewer than when rnic reported them too.)
	assert.Equal(t, 8*3+8+8+12*6+2, topologySeries(md), "DGX H100 with the defaults")

	md = scrapeTopology(t, "dgx-h100", allPairs)
	assert.Equal(t, 96, countPoints(md, "rnic.topology.gpu_distance"), "all_pairs: the full matrix")
	assert.Equal(t, 96*3+8+8+12*6+2, topologySeries(md), "DGX H100 with all_pairs")
	gpu0 := topoAttr(t, md, "rnic.topology.nearest_rnic", map[string]any{"device": testfs.DGXComputeNICs[0].RDMA}, "gpu.pci.bus_id").(string)
	assert.Equal(t, "SYS", mustPath(t, md, gpu0, "mlx5_11"))
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.gpudirect_ready", map[string]any{"gpu.pci.bus_id": gpu0, "device": "mlx5_11", "gpudirect.reason": "pcie_path"}))
}

// TestTopologyGen5InGen4: a Gen5 NIC trained to 16 GT/s under a Gen4 upstream port is running at
// what the link can reach, and its own maximum is still reported.
func TestTopologyGen5InGen4(t *testing.T) {
	md := scrapeTopology(t, "gen5-in-gen4", nil)
	assert.Equal(t, int64(0), topoValue(t, md, "rnic.topology.link.degraded", map[string]any{"device": "mlx5_0"}))
	assert.Equal(t, 32.0, topoPoint(t, md, "rnic.topology.link.speed", map[string]any{"device": "mlx5_0", "pcie.link.bound": "max"}).DoubleValue())
}
