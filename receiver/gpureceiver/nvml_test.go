//go:build linux && cgo

package gpureceiver

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"go.uber.org/zap"
)

// nvmlNode is go-nvml's own DGX H100 mock (pkg/nvml/mock/dgxh100: eight H100 SXM5 80GB) with the
// getters the receiver calls filled in the way NVML answers them (nvml.h): the PCI bus id as
// "%08X:%02X:%02X.0", nvmlDeviceGetFieldValues filling each request's value, value type and
// nvmlReturn, counters in bytes (PCIe) and KiB (NVLink data throughput).
type nvmlNode struct {
	*server.Server
	pcieTx, nvlinkRxKiB uint64
	lost                map[int]bool
	fieldRet            nvml.Return // per-value return of the NVLink TX field 138
	rxRet               nvml.Return // per-value return of the NVLink RX field 139
	// pcieType is the value type NVML gives FI_DEV_PCIE_COUNT_*; its width is not documented
	// (nvml.h: "Value can be wrapped"), so tests try both the 64-bit and the 32-bit one.
	pcieType nvml.ValueType
	// nvlink5Ret is the per-value return of the NVLink5 byte totals 202/204: NOT_SUPPORTED on
	// the mock's NVLink4 H100 (inference: NVML answers so for fields of another NVLink generation).
	nvlink5Ret  nvml.Return
	nvlink5Byte uint64
	// GPM: noGPM lists GPUs without GPM; samples counts nvmlGpmSampleGet calls per GPU; freed
	// counts freed samples.
	noGPM   map[int]bool
	samples map[int]int
	allocs  int
	freed   int
}

func newNVMLNode() *nvmlNode {
	n := &nvmlNode{Server: dgxh100.New(), lost: map[int]bool{}, fieldRet: nvml.SUCCESS, rxRet: nvml.SUCCESS, noGPM: map[int]bool{}, samples: map[int]int{},
		pcieType: nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvlink5Ret: nvml.ERROR_NOT_SUPPORTED}
	n.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) {
		n.allocs++
		return &mock.GpmSample{FreeFunc: func() nvml.Return { n.freed++; return nvml.SUCCESS }}, nvml.SUCCESS
	}
	// nvmlGpmMetricsGet fills each requested metric: GRAPHICS_UTIL 90 %, SM_UTIL 80 %, DRAM_BW_UTIL 37.5 %.
	n.GpmMetricsGetFunc = func(req *nvml.GpmMetricsGetType) nvml.Return {
		if req.Version != nvml.GPM_METRICS_GET_VERSION || req.Sample1 == nil || req.Sample2 == nil || req.Sample1 == req.Sample2 {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		for k := uint32(0); k < req.NumMetrics; k++ {
			m := &req.Metrics[k]
			m.NvmlReturn = uint32(nvml.SUCCESS)
			switch nvml.GpmMetricId(m.MetricId) {
			case nvml.GPM_METRIC_GRAPHICS_UTIL:
				m.Value = 90
			case nvml.GPM_METRIC_SM_UTIL:
				m.Value = 80
			case nvml.GPM_METRIC_DRAM_BW_UTIL:
				m.Value = 37.5
			default:
				m.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
	for i, d := range n.Devices {
		dev := d.(*server.Device)
		i := i
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for j, c := range fmt.Sprintf("00000000:%02X:00.0", 0x1b+0x20*i) {
				p.BusId[j] = int8(c)
			}
			return p, nvml.SUCCESS
		}
		dev.GetFieldValuesFunc = func(values []nvml.FieldValue) nvml.Return {
			if n.lost[i] {
				return nvml.ERROR_GPU_IS_LOST
			}
			for k := range values {
				v := &values[k]
				v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				v.NvmlReturn = uint32(nvml.SUCCESS)
				var x uint64
				switch v.FieldId {
				case nvml.FI_DEV_PCIE_COUNT_TX_BYTES:
					x = n.pcieTx * uint64(i+1)
					if n.pcieType == nvml.VALUE_TYPE_UNSIGNED_INT {
						v.ValueType = uint32(n.pcieType)
						x &= math.MaxUint32
					}
				case nvml.FI_DEV_PCIE_COUNT_RX_BYTES:
					x = 5
				case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
					v.NvmlReturn = uint32(n.fieldRet)
				case nvml.FI_DEV_NVLINK_COUNT_XMIT_BYTES, nvml.FI_DEV_NVLINK_COUNT_RCV_BYTES:
					v.NvmlReturn = uint32(n.nvlink5Ret)
					if v.ScopeId != math.MaxUint32 {
						v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
					}
					x = n.nvlink5Byte
				case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
					v.NvmlReturn = uint32(n.rxRet)
					if v.ScopeId != math.MaxUint32 {
						v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
					}
					x = n.nvlinkRxKiB
				}
				binary.LittleEndian.PutUint64(v.Value[:], x)
			}
			return nvml.SUCCESS
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			if n.lost[i] {
				return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST
			}
			return nvml.Utilization{Gpu: 80, Memory: 30}, nvml.SUCCESS
		}
		dev.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
			if n.noGPM[i] {
				return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION}, nvml.SUCCESS
			}
			return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 1}, nvml.SUCCESS
		}
		dev.GpmSampleGetFunc = func(nvml.GpmSample) nvml.Return { n.samples[i]++; return nvml.SUCCESS }
		dev.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 2, nvml.SUCCESS }
		dev.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		dev.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
		dev.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	}
	return n
}

func newNVMLScraper(t *testing.T, node *nvmlNode) (*gpuScraper, *testClock) {
	s, _, clock := newTestScraper(t, newFakeDCGM(0), func(c *Config) { c.Source = sourceNVML })
	s.live = func(_ *Config, logger *zap.Logger, want quantitySet, numa func(string) int64) (source, error) {
		src, err := openNVML(node, logger, want, numa, nil)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
	return s, clock
}

func TestNVMLSource(t *testing.T) {
	node := newNVMLNode()
	node.pcieTx, node.nvlinkRxKiB = 1000, 4
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	require.NotNil(t, s.src)
	assert.Len(t, s.src.devices(), 8)
	m := scrapeOnce(t, s)

	info := one(t, m, "gpu.info", "device", "gpu1")
	assert.Equal(t, "0000:3b:00.0", info.attrs["pci.bus_id"])
	assert.EqualValues(t, 1, info.attrs["numa.node"])
	assert.Equal(t, "nvml", info.attrs["source"])
	assert.Equal(t, "NVIDIA H100 80GB HBM3", info.attrs["gpu.model"])
	// The start-time rule (metadata/start-time.md): NVML's counters count since boot, so the first
	// point is 0 at the first reading and the next ones what was counted since.
	first := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 0, first.i, "the first point of a since-boot counter")
	assert.Equal(t, pcommon.NewTimestampFromTime(clock.t), first.start, "starts at the first reading")
	assert.EqualValues(t, 0, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "receive").i)
	assert.Len(t, find(m, "interconnect.io", "component", "gpu_nvlink", "direction", "transmit"), 8, "a zero counter is a value")
	assert.InDelta(t, 0.8, one(t, m, "gpu.utilization", "device", "gpu7").f, 1e-9)
	assert.InDelta(t, 0.3, one(t, m, "gpu.memory.copy_utilization", "device", "gpu7").f, 1e-9)
	assert.EqualValues(t, 0, one(t, m, "gpu.pcie.replays", "device", "gpu3").i, "replays since boot: 0 at the first reading")
	assert.EqualValues(t, 16, one(t, m, "gpu.pcie.link.width", "device", "gpu3").i)
	assert.Empty(t, points(m, "gpu.dram.active"), "the first GPM sample only starts the period")

	clock.t = clock.t.Add(10 * time.Second)
	node.pcieTx, node.nvlinkRxKiB = 1500, 6
	m = scrapeOnce(t, s)
	p := one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "transmit")
	assert.Equal(t, first.start, p.start)
	assert.EqualValues(t, 2*500, p.i, "bytes counted since the first reading")
	assert.EqualValues(t, 2*1024, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "receive").i, "KiB x 1024")
	assert.InDelta(t, 0.375, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9, "GPM, from the second sample on")

	// GPU 2 falls off the bus; the counter of GPU 0 is reset by a driver reload.
	node.lost[2] = true
	node.pcieTx = 10
	clock.t = clock.t.Add(10 * time.Second)
	m, err := s.scrape(context.Background())
	require.True(t, scrapererror.IsPartialScrapeError(err), "a lost GPU costs its own points: %v", err)
	assert.ErrorContains(t, err, "gpu2: the GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)")
	assert.Empty(t, find(m, "interconnect.io", "device", "gpu2"))
	assert.Empty(t, find(m, "gpu.utilization", "device", "gpu2"))
	assert.Len(t, points(m, "gpu.utilization"), 7)
	again := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 10, again.i)
	assert.Greater(t, again.start, first.start, "a reset starts a new series")
}

// TestNVMLPCIeCounterWraps (G5): FI_DEV_PCIE_COUNT_TX/RX_BYTES "Value can be wrapped" (nvml.h).
// Where NVML gives them a 32-bit value type, a decrease is a wrap at 2^32, not a reset; with the
// 64-bit type a decrease stays a reset (TestNVMLSource).
func TestNVMLPCIeCounterWraps(t *testing.T) {
	node := newNVMLNode()
	node.pcieType = nvml.VALUE_TYPE_UNSIGNED_INT
	node.pcieTx = math.MaxUint32 - 999 // GPU 0 just below 2^32
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	first := one(t, scrapeOnce(t, s), "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit")
	node.pcieTx = math.MaxUint32 + 1 + 500 // wrapped: 1000 to reach 2^32, then 500
	clock.t = clock.t.Add(10 * time.Second)
	p := one(t, scrapeOnce(t, s), "interconnect.io", "device", "gpu0", "component", "gpu_pcie", "direction", "transmit")
	assert.EqualValues(t, 1500, p.i)
	assert.Equal(t, first.start, p.start, "a wrap is not a reset")
}

// TestNVMLNVLink5ByteCounters (G9): on NVLink5 (Blackwell) the NVLink bytes come from
// FI_DEV_NVLINK_COUNT_XMIT/RCV_BYTES (202/204, "Total Tx/Rx bytes on the link in NVLink5",
// nvml.h), which DCGM aggregates for its 1201/1203, where THROUGHPUT_DATA 138/139 are not
// supported.
func TestNVMLNVLink5ByteCounters(t *testing.T) {
	node := newNVMLNode()
	node.fieldRet, node.rxRet = nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_NOT_SUPPORTED // 138, 139
	node.nvlink5Ret = nvml.SUCCESS
	node.nvlink5Byte = 1 << 30
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s) // 138 refused: the next poll reads 202/204
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	first := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "transmit")
	node.nvlink5Byte += 5000
	clock.t = clock.t.Add(10 * time.Second)
	m = scrapeOnce(t, s)
	p := one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "transmit")
	assert.EqualValues(t, 5000, p.i, "bytes, not KiB")
	assert.Equal(t, first.start, p.start)
}

func TestNVMLNotSupportedFieldSaidOnce(t *testing.T) {
	node := newNVMLNode()
	node.fieldRet = nvml.ERROR_NOT_SUPPORTED // NVLink TX on a GPU without NVLink
	core, logs := newObserved()
	src, err := openNVML(node, core, wantedQuantities(createDefaultConfig().(*Config).Metrics), nil, nil)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = src.poll(time.Unix(1_800_000_000, 0), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu0/nvlink_tx_bytes")).Len())
}

func TestNVMLLibraryNotFound(t *testing.T) {
	node := newNVMLNode()
	node.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	node.DeviceGetCountFunc = func() (int, nvml.Return) {
		panic("an NVML call after a failed Init: the real process would die with a symbol lookup error")
	}
	_, err := openNVML(node, zap.NewNop(), 0, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "libnvidia-ml.so.1 not found")
}

// TestNVMLGPM: on GPUs with GPM, graphics, SM and DRAM activity come from two GPM samples; a GPU
// without GPM lacks only those, and says so once.
func TestNVMLGPM(t *testing.T) {
	node := newNVMLNode()
	node.noGPM[5] = true
	logger, logs := newObserved()
	src, err := openNVML(node, logger, wantedQuantities(createDefaultConfig().(*Config).Metrics), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 14, node.allocs, "two samples per GPU with GPM")
	var smp []sample
	for i := 0; i < 2; i++ {
		smp, err = src.poll(time.Unix(1_800_000_000, 0), smp[:0])
		require.NoError(t, err)
	}
	got := map[int]map[quantity]float64{}
	for _, x := range smp {
		if got[x.gpu] == nil {
			got[x.gpu] = map[quantity]float64{}
		}
		got[x.gpu][x.q] = x.f
	}
	assert.InDelta(t, 0.375, got[0][qDRAMActive], 1e-9)
	assert.InDelta(t, 0.8, got[3][qSMActive], 1e-9)
	assert.InDelta(t, 0.9, got[7][qGREngineActive], 1e-9)
	assert.NotContains(t, got[5], qDRAMActive)
	assert.Contains(t, got[5], qGPUUtil, "the rest of the GPU is read")
	assert.Equal(t, 2, node.samples[0])
	assert.Zero(t, node.samples[5])
	assert.Equal(t, 1, logs.FilterField(zap.String("key", "gpu5/gpm")).Len())
	require.NoError(t, src.close())
	assert.Equal(t, node.allocs, node.freed, "GPM samples are freed")
}

func TestNVMLDeviceSelection(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Include = devicefilter.Match{Devices: []string{"gpu[0-3]"}, MatchType: devicefilter.Glob}
	cfg.Exclude = devicefilter.Match{Devices: []string{"0000:3b:00.0"}, MatchType: devicefilter.Strict} // gpu1 by its PCI address
	require.NoError(t, cfg.Validate())
	src, err := openNVML(newNVMLNode(), zap.NewNop(), 0, nil, cfg.selects)
	require.NoError(t, err)
	var names []string
	for _, d := range src.devices() {
		names = append(names, d.name)
	}
	assert.Equal(t, []string{"gpu0", "gpu2", "gpu3"}, names)
}
