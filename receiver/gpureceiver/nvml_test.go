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
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"

	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
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
	// gpmLinks: the GPUs' GPM has the link metrics (NVML_GPM_METRIC_PCIE_TX/RX_PER_SEC,
	// C2C_TOTAL_TX/RX_PER_SEC) and answers them with these MiB/s; without it, NOT_SUPPORTED, as a
	// driver whose GPM lacks them answers. c2cLinks is NVML_FI_DEV_C2C_LINK_COUNT (0 on the
	// DGX H100's PCIe-attached GPUs). fieldIDs records every field id asked for.
	gpmLinks             bool
	pcieTxMiB, pcieRxMiB float64
	c2cTxMiB, c2cRxMiB   float64
	c2cLinks             uint64
	fieldIDs             map[uint32]int
	// nvlinks is NVML_FI_DEV_NVLINK_LINK_COUNT; linkKiB and linkErrors answer the per-link fields
	// (138/139 and 163/161/162 with the link as scopeId).
	nvlinks    uint64
	linkKiB    func(link uint32) uint64
	linkErrors func(field, link uint32) uint64
}

func newNVMLNode() *nvmlNode {
	n := &nvmlNode{Server: dgxh100.New(), lost: map[int]bool{}, fieldRet: nvml.SUCCESS, rxRet: nvml.SUCCESS, noGPM: map[int]bool{}, samples: map[int]int{},
		pcieType: nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvlink5Ret: nvml.ERROR_NOT_SUPPORTED, fieldIDs: map[uint32]int{}}
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
			case nvml.GPM_METRIC_PCIE_TX_PER_SEC, nvml.GPM_METRIC_PCIE_RX_PER_SEC, nvml.GPM_METRIC_C2C_TOTAL_TX_PER_SEC, nvml.GPM_METRIC_C2C_TOTAL_RX_PER_SEC:
				m.Value = map[nvml.GpmMetricId]float64{
					nvml.GPM_METRIC_PCIE_TX_PER_SEC: n.pcieTxMiB, nvml.GPM_METRIC_PCIE_RX_PER_SEC: n.pcieRxMiB,
					nvml.GPM_METRIC_C2C_TOTAL_TX_PER_SEC: n.c2cTxMiB, nvml.GPM_METRIC_C2C_TOTAL_RX_PER_SEC: n.c2cRxMiB,
				}[nvml.GpmMetricId(m.MetricId)]
				if !n.gpmLinks {
					m.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				}
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
				n.fieldIDs[v.FieldId]++
				switch v.FieldId {
				case nvml.FI_DEV_C2C_LINK_COUNT:
					x = n.c2cLinks
				case nvml.FI_DEV_NVLINK_LINK_COUNT:
					x = n.nvlinks
				case nvml.FI_DEV_NVLINK_ERROR_DL_CRC, nvml.FI_DEV_NVLINK_ERROR_DL_REPLAY, nvml.FI_DEV_NVLINK_ERROR_DL_RECOVERY:
					if v.ScopeId >= uint32(n.nvlinks) || n.linkErrors == nil {
						v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
					} else {
						x = n.linkErrors(v.FieldId, v.ScopeId)
					}
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
					if v.ScopeId != math.MaxUint32 && n.linkKiB != nil {
						x = n.linkKiB(v.ScopeId)
					}
				case nvml.FI_DEV_NVLINK_COUNT_XMIT_BYTES, nvml.FI_DEV_NVLINK_COUNT_RCV_BYTES:
					v.NvmlReturn = uint32(n.nvlink5Ret)
					if v.ScopeId != math.MaxUint32 {
						v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
					}
					x = n.nvlink5Byte
				case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
					v.NvmlReturn = uint32(n.rxRet)
					x = n.nvlinkRxKiB
					switch {
					case v.ScopeId != math.MaxUint32 && n.linkKiB != nil && v.ScopeId < uint32(n.nvlinks):
						x = 2 * n.linkKiB(v.ScopeId)
					case v.ScopeId != math.MaxUint32:
						v.NvmlReturn = uint32(nvml.ERROR_INVALID_ARGUMENT)
					}
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
	assert.InDelta(t, 0.375, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9, "GPM's first period starts when the GPU is set up")

	clock.t = clock.t.Add(10 * time.Second)
	node.pcieTx, node.nvlinkRxKiB = 1500, 6
	m = scrapeOnce(t, s)
	p := one(t, m, "interconnect.io", "device", "gpu1", "component", "gpu_pcie", "direction", "transmit")
	assert.Equal(t, first.start, p.start)
	assert.EqualValues(t, 2*500, p.i, "bytes counted since the first reading")
	assert.EqualValues(t, 2*1024, one(t, m, "interconnect.io", "device", "gpu0", "component", "gpu_nvlink", "direction", "receive").i, "KiB x 1024")
	assert.InDelta(t, 0.375, one(t, m, "gpu.dram.active", "device", "gpu0").f, 1e-9, "GPM, every poll")

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
	assert.Equal(t, 3, node.samples[0], "one GPM sample at setup, one per poll")
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

// TestNVMLGraceGPMLinks (N12): a GH200 / GB200 without DCGM. Its GPU has C2C links
// (NVML_FI_DEV_C2C_LINK_COUNT > 0) and GPM with the link metrics (nvml.h nvmlGpmMetricId_t:
// NVML_GPM_METRIC_PCIE_TX/RX_PER_SEC 20/21 and C2C_TOTAL_TX/RX_PER_SEC 100/101, MiB/sec), so its
// PCIe and C2C bytes are those rates integrated over the GPM periods; the PCIe counters 197/198,
// whose width nvml.h does not document (G5), are not read at all.
func TestNVMLGraceGPMLinks(t *testing.T) {
	node := newNVMLNode()
	node.gpmLinks, node.c2cLinks = true, 10
	node.pcieTxMiB, node.pcieRxMiB, node.c2cTxMiB, node.c2cRxMiB = 1000, 500, 2000, 3000
	node.pcieTx = math.MaxUint64 / 4 // what a counter would say: must not appear
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s) // each series opens at its first rate sample
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	io := func(comp, dir string) int64 {
		return one(t, m, "interconnect.io", "device", "gpu0", "component", comp, "direction", dir).i
	}
	assert.EqualValues(t, 10*1000<<20, io("gpu_pcie", "transmit"), "10 s at 1000 MiB/s")
	assert.EqualValues(t, 10*500<<20, io("gpu_pcie", "receive"))
	assert.EqualValues(t, 10*2000<<20, io("gpu_c2c", "transmit"))
	assert.EqualValues(t, 10*3000<<20, io("gpu_c2c", "receive"))
	assert.Zero(t, node.fieldIDs[nvml.FI_DEV_PCIE_COUNT_TX_BYTES], "the PCIe counters are not read where GPM has PCIe")
	assert.Zero(t, node.fieldIDs[nvml.FI_DEV_PCIE_COUNT_RX_BYTES])
	assert.Len(t, find(m, "interconnect.io", "component", "gpu_c2c"), 16, "eight GPUs, two directions")
}

// TestNVMLGPMWithoutC2C: a GPU whose GPM has the link metrics but no C2C link
// (NVML_FI_DEV_C2C_LINK_COUNT 0, an HGX H100) is not asked for C2C: no gpu_c2c series, and the
// GPU keeps its four interconnect.io series.
func TestNVMLGPMWithoutC2C(t *testing.T) {
	node := newNVMLNode()
	node.gpmLinks = true
	node.pcieTxMiB = 1
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	assert.Empty(t, find(m, "interconnect.io", "component", "gpu_c2c"))
	assert.EqualValues(t, 10<<20, one(t, m, "interconnect.io", "device", "gpu3", "component", "gpu_pcie", "direction", "transmit").i)
	assert.Len(t, find(m, "interconnect.io", "device", "gpu3"), 4, "PCIe and NVLink, two directions each")
}

// seriesPerGPU counts the data points of one scrape that belong to device.
func seriesPerGPU(m pmetric.Metrics, device string) int {
	n := 0
	for _, typ := range []pmetric.MetricType{pmetric.MetricTypeGauge, pmetric.MetricTypeSum} {
		for _, dps := range metrictest.ByType(m, typ) {
			for _, dp := range dps {
				if v, ok := dp.Attributes().Get("device"); ok && v.Str() == device {
					n++
				}
			}
		}
	}
	return n
}

// TestNVMLDefaultSeriesPerGPU: what one GPU costs by default through NVML on an H100 (dgxh100
// mock, second scrape): gpu.info, 4 interconnect.io (PCIe and NVLink, two directions), 5
// activity ratios, 4 PCIe link gauges and the replay counter. The per-link metrics are opt-in and
// must not change it, even on a GPU with 18 links.
func TestNVMLDefaultSeriesPerGPU(t *testing.T) {
	node := newNVMLNode()
	node.nvlinks = 18
	node.linkKiB = func(l uint32) uint64 { return uint64(l) }
	s, clock := newNVMLScraper(t, node)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	clock.t = clock.t.Add(10 * time.Second)
	assert.Equal(t, 1+4+5+4+1, seriesPerGPU(scrapeOnce(t, s), "gpu0"))
}

// TestNVMLPerLink: with the opt-in per-link metrics, an 18-link H100 (NVML_FI_DEV_NVLINK_LINK_COUNT
// 18) gets its bytes per link (138/139 with the link as scopeId, KiB x 1024) and its data-link
// errors per link (163/161/162); the link that carries nothing while its peers carry traffic, and
// the one whose CRC errors climb, are named by the link attribute.
func TestNVMLPerLink(t *testing.T) {
	node := newNVMLNode()
	node.nvlinks = 18
	step := uint64(0)
	node.linkKiB = func(l uint32) uint64 {
		if l == 7 {
			return 0 // a link trained down: carries nothing
		}
		return step * uint64(l+1)
	}
	node.linkErrors = func(field, l uint32) uint64 {
		if field == nvml.FI_DEV_NVLINK_ERROR_DL_CRC && l == 11 {
			return 100 + 50*step
		}
		return 3
	}
	s, clock := newNVMLScraper(t, node)
	s.cfg.Metrics.GpuNvlinkLinkIo.Enabled = true
	s.cfg.Metrics.GpuNvlinkLinkErrors.Enabled = true
	s.want = wantedQuantities(s.cfg.Metrics)
	s.mb = metadata.NewMetricsBuilder(s.cfg.MetricsBuilderConfig, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	step = 10
	clock.t = clock.t.Add(10 * time.Second)
	m := scrapeOnce(t, s)
	tx := func(l int64) int64 {
		return one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", l, "direction", "transmit").i
	}
	assert.EqualValues(t, 10*4*1024, tx(3), "link 3: 40 KiB since the first reading")
	assert.EqualValues(t, 2*10*4*1024, one(t, m, "gpu.nvlink.link.io", "device", "gpu0", "link", int64(3), "direction", "receive").i)
	assert.EqualValues(t, 0, tx(7), "the idle link among busy peers")
	assert.EqualValues(t, 500, one(t, m, "gpu.nvlink.link.errors", "device", "gpu0", "link", int64(11), "nvlink.error", "crc").i)
	assert.EqualValues(t, 0, one(t, m, "gpu.nvlink.link.errors", "device", "gpu0", "link", int64(11), "nvlink.error", "replay").i)
	// What the per-link metrics add for one 18-link GPU: 18 x 2 directions + 18 x 3 error kinds.
	assert.Len(t, find(m, "gpu.nvlink.link.io", "device", "gpu0"), 36)
	assert.Len(t, find(m, "gpu.nvlink.link.errors", "device", "gpu0"), 54)
	assert.Equal(t, 1+4+5+4+1+90, seriesPerGPU(m, "gpu0"))
}
