//go:build linux && cgo

package gpureceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestNVMLFallbackWhileDCGMIsUp (G6): DCGM is up but its profiling module is not loaded
// (DCGM_ST_MODULE_NOT_LOADED: before Hopper it needs the proprietary package and a root
// hostengine; dcgm-exporter issues #22, #152): PCIe and NVLink bytes come from NVML's cumulative
// counters for those GPUs, matched by PCI address, while everything else stays DCGM's.
func TestNVMLFallbackWhileDCGMIsUp(t *testing.T) {
	f := newFakeDCGM(2)
	f.profErr = &dcgmError{op: "listing profiling metrics", code: dcgmStModuleNotLoaded, msg: "module not loaded"}
	f.setInt(0, dcgmFieldGPUUtil, 42)
	node := newNVMLNode()
	node.pcieTx, node.nvlinkRxKiB = 1000, 4
	s, logs, clock := newTestScraper(t, f, nil)
	s.live = func(cfg *Config, logger *zap.Logger, want quantitySet, numa func(string) int64) (source, error) {
		src, err := openDCGM(f, cfg, logger, want, numa)
		if err != nil {
			return nil, err
		}
		return withNVMLFallback(src, logger, func() (source, error) {
			return openNVMLQuiet(node, logger, want, numa, nil, true)
		}), nil
	}
	require.NoError(t, s.start(context.Background(), nil))
	m := scrapeOnce(t, s)
	first := one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "transmit")
	assert.Equal(t, "0000:3b:00.0", first.attrs["pci.bus_id"], "DCGM's GPU 1 got NVML's GPU 1 (same PCI address)")
	assert.Len(t, find(m, "gpu.info"), 2, "DCGM's GPUs only, not NVML's eight")
	assert.Equal(t, "dcgm", one(t, m, "gpu.info", "device", "gpu0").attrs["source"])
	assert.InDelta(t, 0.42, one(t, m, "gpu.utilization", "device", "gpu0").f, 1e-9, "DCGM's own fields")

	node.pcieTx = 1500
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	assert.EqualValues(t, 2*500, one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "transmit").i)
	assert.Len(t, find(m, "gpu.utilization"), 1, "NVML's utilisation is not mixed in")

	told := logs.FilterMessage("GPU bytes that DCGM cannot supply are read through NVML").All()
	require.Len(t, told, 2, "one line per GPU")
	assert.Contains(t, told[0].ContextMap()["quantities"], "pcie_tx_bytes")
	assert.Zero(t, logs.FilterMessage("GPU interconnect bytes: source per quantity").FilterField(zap.String("source", "nvml")).Len())
}
