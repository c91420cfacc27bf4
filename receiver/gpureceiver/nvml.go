//go:build linux && cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
)

// NVML field ids for the cumulative byte counters (nvml.h, go-nvml pkg/nvml/const.go):
// FI_DEV_PCIE_COUNT_TX/RX_BYTES (197/198) "PCIe transmit/receive bytes. Value can be wrapped.";
// FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX (138/139) "NVLink TX/RX Data throughput in KiB", cumulative,
// summed over all links with scopeId UINT_MAX.
//
// NVLink5 (Blackwell) has its own byte totals, FI_DEV_NVLINK_COUNT_XMIT/RCV_BYTES (202/204)
// "Total Tx/Rx bytes on the link in NVLink5", from which DCGM builds its NVLink5 totals 1201/1203
// (dcgm_fields.cpp, DcgmCMUtils.cpp NvmlFieldRequiresNvLinkAggregate): they are read, summed over
// all links with scopeId UINT_MAX, on a GPU whose 138/139 are NOT_SUPPORTED (nvlink5 fields).
var nvmlCounterFields = []struct {
	id    uint32
	scope uint32
	q     quantity
	scale uint64
	// nvlink5: read only on GPUs where the THROUGHPUT_DATA fields are not supported.
	nvlink5 bool
}{
	{nvml.FI_DEV_PCIE_COUNT_TX_BYTES, 0, qPCIeTxBytes, 1, false},
	{nvml.FI_DEV_PCIE_COUNT_RX_BYTES, 0, qPCIeRxBytes, 1, false},
	{nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, math.MaxUint32, qNVLinkTxBytes, 1024, false},
	{nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, math.MaxUint32, qNVLinkRxBytes, 1024, false},
	{nvml.FI_DEV_NVLINK_COUNT_XMIT_BYTES, math.MaxUint32, qNVLinkTxBytes, 1, true},
	{nvml.FI_DEV_NVLINK_COUNT_RCV_BYTES, math.MaxUint32, qNVLinkRxBytes, 1, true},
}

// nvmlGPMMetrics are the GPU Performance Monitoring metrics read where the GPU has GPM (Hopper and
// later), each over the period between two GPM samples (nvml.h nvmlGpmMetricId_t). Activity:
// percentages (NVML_GPM_METRIC_GRAPHICS_UTIL, SM_UTIL, DRAM_BW_UTIL "Percentage of DRAM bw used vs
// theoretical maximum"), the counters DCGM reads for GR_ENGINE_ACTIVE, SM_ACTIVE and DRAM_ACTIVE on
// Hopper. Links: MiB/s (NVML_GPM_METRIC_PCIE_TX/RX_PER_SEC "PCIe traffic from/to this GPU in
// MiB/sec", NVML_GPM_METRIC_C2C_TOTAL_TX/RX_PER_SEC "C2C total transmit/receive bandwidth in
// MiB/sec"), the metrics DCGM turns into DCGM_FI_PROF_PCIE_TX/RX_BYTES and
// DCGM_FI_PROF_C2C_TX/RX_ALL_BYTES (MiB/s x 2^20, dcgm_fields.h), integrated like them.
var nvmlGPMMetrics = []struct {
	id nvml.GpmMetricId
	q  quantity
	// scale turns the metric's value into the quantity's: 1/100 for a percentage, 2^20 for MiB/s.
	scale float64
}{
	{nvml.GPM_METRIC_GRAPHICS_UTIL, qGREngineActive, 0.01},
	{nvml.GPM_METRIC_SM_UTIL, qSMActive, 0.01},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, qDRAMActive, 0.01},
	{nvml.GPM_METRIC_PCIE_TX_PER_SEC, qPCIeTxRate, 1 << 20},
	{nvml.GPM_METRIC_PCIE_RX_PER_SEC, qPCIeRxRate, 1 << 20},
	{nvml.GPM_METRIC_C2C_TOTAL_TX_PER_SEC, qC2CTxRate, 1 << 20},
	{nvml.GPM_METRIC_C2C_TOTAL_RX_PER_SEC, qC2CRxRate, 1 << 20},
}

// nvmlSource reads GPUs through NVML (go-nvml), the fallback where DCGM is absent. NVLink bytes come
// from NVML's cumulative counters. Where the GPU has GPM, PCIe and C2C bytes come from GPM's rates,
// integrated, and so do graphics, SM and DRAM activity; PCIe falls back to the cumulative counters
// 197/198 where GPM lacks its PCIe metrics. It has no XID history (that needs an event set).
//
// The GPM PCIe rates are preferred over 197/198 because nvml.h documents no width for those
// counters ("Value can be wrapped"): their width is judged by the value type NVML declares, which
// is all there is to judge it by; a GPM rate has no width to judge.
type nvmlSource struct {
	lib      nvml.Interface
	logger   *zap.Logger
	want     quantitySet
	faults   *faults
	numaNode func(string) int64
	// selects applies the include / exclude device filter (nil: every GPU).
	selects func(gpuDevice) bool

	devs    []gpuDevice
	handles []nvml.Device
	// quiet: do not log the source per quantity (NVML completing DCGM).
	quiet bool
	// nvlink5[i]: devices[i] answered NOT_SUPPORTED for 138/139; its NVLink bytes come from 202/204.
	nvlink5 []bool
	fields  []nvml.FieldValue
	// gpm[i] holds the two GPM samples of devices[i]; nil where the GPU has no GPM.
	gpm        []*nvmlGPM
	gpmRequest nvml.GpmMetricsGetType
	// pcieGPM[i]: devices[i]'s PCIe bytes come from GPM (its GPM is set up and has not answered
	// NOT_SUPPORTED for the PCIe metrics); else from the counters 197/198.
	pcieGPM []bool
	// links[i] is devices[i]'s NVLink link count (NVML_FI_DEV_NVLINK_LINK_COUNT), read where a
	// per-link metric is enabled; linkFields and linkReqs are the per-link request of one GPU.
	links      []uint64
	linkFields []nvml.FieldValue
	linkReqs   []nvmlLinkRequest
	// c2c[i]: devices[i] has C2C links (NVML_FI_DEV_C2C_LINK_COUNT > 0, the field DCGM's
	// DCGM_FI_DEV_C2C_LINK_QUANTITY 285 reads), so its C2C GPM metrics are asked for.
	c2c []bool
}

// nvmlGPM is one GPU's pair of GPM samples: each poll takes a new one and asks for the metrics
// between it and the previous one.
type nvmlGPM struct {
	prev, cur nvml.GpmSample
	primed    bool
}

func openNVMLLibrary(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
	return openNVML(nvml.New(), logger, want, numaNode, cfg.selects)
}

// openNVMLFallback opens NVML to complete DCGM (fallback.go): it does not log its own
// source-per-quantity lines, since it serves only what DCGM lacks.
func openNVMLFallback(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
	s, err := openNVMLQuiet(nvml.New(), logger, want, numaNode, cfg.selects, true)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openNVML initialises NVML. Like go-dcgm, go-nvml binds libnvidia-ml's symbols lazily: nothing
// but Init may be called unless Init succeeded.
func openNVML(lib nvml.Interface, logger *zap.Logger, want quantitySet, numaNode func(string) int64, selects func(gpuDevice) bool) (*nvmlSource, error) {
	return openNVMLQuiet(lib, logger, want, numaNode, selects, false)
}

func openNVMLQuiet(lib nvml.Interface, logger *zap.Logger, want quantitySet, numaNode func(string) int64, selects func(gpuDevice) bool, quiet bool) (*nvmlSource, error) {
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, errors.New("libnvidia-ml.so.1 not found (no NVIDIA driver on this node, or its library is not visible to the collector)")
	default:
		return nil, fmt.Errorf("nvmlInit: %s", nvmlErr(ret))
	}
	s := &nvmlSource{lib: lib, logger: logger, want: want, faults: newFaults(logger), numaNode: numaNode, selects: selects, quiet: quiet}
	if err := s.refresh(); err != nil {
		_ = lib.Shutdown()
		return nil, err
	}
	return s, nil
}

// nvmlErr names an NVML return code. The code's own Error() is pure Go in go-nvml until a
// library is loaded, so it is safe on every path.
func nvmlErr(ret nvml.Return) string { return ret.Error() }

func (s *nvmlSource) kind() string         { return "nvml" }
func (s *nvmlSource) devices() []gpuDevice { return s.devs }

func (s *nvmlSource) refresh() error {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvmlDeviceGetCount: %s", nvmlErr(ret))
	}
	if n == 0 {
		return errors.New("NVML sees no GPU on this node")
	}
	devs := make([]gpuDevice, 0, n)
	handles := make([]nvml.Device, 0, n)
	for i := 0; i < n; i++ {
		name := "gpu" + strconv.Itoa(i)
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			s.faults.missing(name, fmt.Errorf("nvmlDeviceGetHandleByIndex: %s", nvmlErr(ret)))
			continue
		}
		d := gpuDevice{id: uint(i), name: name, numaNode: -1}
		if v, ret := h.GetUUID(); ret == nvml.SUCCESS {
			d.uuid = v
		}
		if v, ret := h.GetName(); ret == nvml.SUCCESS {
			d.model = v
		}
		if p, ret := h.GetPciInfo(); ret == nvml.SUCCESS {
			d.busID = pci.NormaliseAddress(cString(p.BusId[:]))
			if d.busID != "" && s.numaNode != nil {
				d.numaNode = s.numaNode(d.busID)
			}
		}
		if s.selects != nil && !s.selects(d) {
			continue
		}
		devs = append(devs, d)
		handles = append(handles, h)
	}
	if len(devs) == 0 {
		return errors.New("no GPU left after include / exclude")
	}
	prev, prevGPM := s.devs, s.gpm
	s.devs, s.handles = devs, handles
	s.nvlink5 = make([]bool, len(devs))
	s.gpm = make([]*nvmlGPM, len(handles))
	s.pcieGPM = make([]bool, len(handles))
	s.c2c = make([]bool, len(handles))
	// NVML completing DCGM (quiet) stands in with counters only: the fallback takes counter
	// quantities (fallback.go missingLinks), and DCGM reads C2C itself.
	links := !s.quiet && s.want.has(qPCIeTxRate)
	activity := s.want.has(qGREngineActive) || s.want.has(qSMActive) || s.want.has(qDRAMActive)
	s.links = make([]uint64, len(handles))
	perLink := false
	for q := qNVLinkLinkTxBytes; q <= qNVLinkLinkRecoveries; q++ {
		perLink = perLink || s.want.has(q)
	}
	for i, h := range handles {
		if perLink {
			s.links[i] = nvmlFieldCount(h, nvml.FI_DEV_NVLINK_LINK_COUNT)
		}
		if links {
			s.c2c[i] = nvmlFieldCount(h, nvml.FI_DEV_C2C_LINK_COUNT) > 0
		}
		if activity || links {
			// A GPU still there keeps its samples: a new pair would start a period now, and
			// the poll right after this rediscovery would ask for the rates of a period of
			// microseconds (nvml.h: samples "should be greater than 100ms" apart).
			if j := slices.Index(prev, devs[i]); j >= 0 && j < len(prevGPM) && prevGPM[j] != nil {
				s.gpm[i], prevGPM[j] = prevGPM[j], nil
			} else {
				s.gpm[i] = s.setupGPM(devs[i].name, h)
			}
		}
		s.pcieGPM[i] = links && s.gpm[i] != nil
	}
	freeGPM(prevGPM)
	for i, d := range devs {
		if !s.quiet && !slices.ContainsFunc(prev, func(o gpuDevice) bool { return o == d }) {
			pcie, c2c := "counter NVML fields 197/198 FI_DEV_PCIE_COUNT_TX/RX_BYTES (cumulative bytes)", "none (the GPU has no C2C link, or no GPM)"
			if s.pcieGPM[i] {
				pcie = "rate NVML GPM metrics 20/21 PCIE_TX/RX_PER_SEC (MiB/s, integrated); fields 197/198 if GPM lacks them"
			}
			if s.c2c[i] && s.gpm[i] != nil {
				c2c = "rate NVML GPM metrics 100/101 C2C_TOTAL_TX/RX_PER_SEC (MiB/s, integrated)"
			}
			s.logger.Info("GPU interconnect bytes: source per quantity", zap.String("device", d.name), zap.String("gpu.uuid", d.uuid),
				zap.String("gpu_pcie", pcie),
				zap.String("gpu_nvlink", "counter NVML fields 138/139 FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX (cumulative KiB)"),
				zap.String("gpu_c2c", c2c))
		}
	}
	return nil
}

// nvmlFieldCount returns a count field of the GPU (NVML_FI_DEV_C2C_LINK_COUNT "Number of C2C
// Links present on the device", NVML_FI_DEV_NVLINK_LINK_COUNT "Number of NVLinks present on the
// device", nvml.h), 0 where NVML does not say.
func nvmlFieldCount(h nvml.Device, id uint32) uint64 {
	fv := []nvml.FieldValue{{FieldId: id}}
	if h.GetFieldValues(fv) != nvml.SUCCESS || nvml.Return(fv[0].NvmlReturn) != nvml.SUCCESS {
		return 0
	}
	n, _ := nvmlFieldUint(fv[0])
	return n
}

// nvmlGPMSymbols are the libnvidia-ml functions GPM needs. go-nvml binds symbols lazily: calling
// one that the driver's library lacks (an NVML that predates GPM) kills the process with "symbol
// lookup error", so each is looked up (dlsym) before the first call.
var nvmlGPMSymbols = []string{"nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleFree", "nvmlGpmSampleGet", "nvmlGpmMetricsGet"}

// missingGPMSymbol names the first GPM function the loaded libnvidia-ml.so.1 lacks, "" if none.
func (s *nvmlSource) missingGPMSymbol() string {
	for _, sym := range nvmlGPMSymbols {
		if err := s.lib.Extensions().LookupSymbol(sym); err != nil {
			return sym
		}
	}
	return ""
}

// setupGPM allocates the GPM samples of a GPU that supports GPM (nvmlGpmQueryDeviceSupport).
func (s *nvmlSource) setupGPM(name string, h nvml.Device) *nvmlGPM {
	if sym := s.missingGPMSymbol(); sym != "" {
		s.faults.notProvided(name+"/gpm", "graphics, SM and DRAM activity and C2C bytes missing, PCIe bytes from fields 197/198: "+
			"the driver's libnvidia-ml.so.1 has no GPM (no "+sym+")")
		return nil
	}
	sup, ret := h.GpmQueryDeviceSupport()
	if ret != nvml.SUCCESS || sup.IsSupportedDevice == 0 {
		why := "the GPU has no GPM (NVML GPU performance monitoring needs Hopper or later)"
		if ret != nvml.SUCCESS {
			why = "nvmlGpmQueryDeviceSupport: " + nvmlErr(ret)
		}
		s.faults.notProvided(name+"/gpm", "graphics, SM and DRAM activity and C2C bytes missing, PCIe bytes from fields 197/198: "+why)
		return nil
	}
	prev, ret := s.lib.GpmSampleAlloc()
	if ret != nvml.SUCCESS {
		s.faults.missing(name+"/gpm", fmt.Errorf("nvmlGpmSampleAlloc: %s", nvmlErr(ret)))
		return nil
	}
	cur, ret := s.lib.GpmSampleAlloc()
	if ret != nvml.SUCCESS {
		_ = prev.Free()
		s.faults.missing(name+"/gpm", fmt.Errorf("nvmlGpmSampleAlloc: %s", nvmlErr(ret)))
		return nil
	}
	s.faults.recover(name + "/gpm")
	g := &nvmlGPM{prev: prev, cur: cur}
	// The first sample starts the first period, so that the first poll has GPM metrics and knows
	// whether the GPU's GPM has the PCIe ones before it reads the counters.
	g.primed = h.GpmSampleGet(g.prev) == nvml.SUCCESS
	return g
}

// freeGPM frees the GPM samples of gs.
func freeGPM(gs []*nvmlGPM) {
	for _, g := range gs {
		if g != nil {
			_ = g.prev.Free()
			_ = g.cur.Free()
		}
	}
}

// gpmWants reports whether metric q is asked of GPU i's GPM.
func (s *nvmlSource) gpmWants(i int, q quantity) bool {
	switch q {
	case qPCIeTxRate, qPCIeRxRate:
		return s.pcieGPM[i]
	case qC2CTxRate, qC2CRxRate:
		return s.c2c[i] && s.want.has(q)
	}
	return s.want.has(q)
}

// readGPM takes a GPM sample and reads the metrics of the period since the previous one.
func (s *nvmlSource) readGPM(i int, h nvml.Device, add func(quantity, float64, uint64)) {
	g := s.gpm[i]
	if g == nil {
		return
	}
	name := s.devs[i].name
	wanted := 0
	for _, m := range nvmlGPMMetrics {
		if s.gpmWants(i, m.q) {
			wanted++
		}
	}
	if wanted == 0 {
		return
	}
	if ret := h.GpmSampleGet(g.cur); ret != nvml.SUCCESS {
		s.faults.fail(name+"/gpm", fmt.Errorf("nvmlGpmSampleGet: %s", nvmlErr(ret)), wanted)
		g.primed = false
		return
	}
	if !g.primed { // the first sample only starts the period
		g.prev, g.cur, g.primed = g.cur, g.prev, true
		return
	}
	req := &s.gpmRequest
	*req = nvml.GpmMetricsGetType{Version: nvml.GPM_METRICS_GET_VERSION, Sample1: g.prev, Sample2: g.cur}
	for _, m := range nvmlGPMMetrics {
		if s.gpmWants(i, m.q) {
			req.Metrics[req.NumMetrics].MetricId = uint32(m.id)
			req.NumMetrics++
		}
	}
	g.prev, g.cur = g.cur, g.prev
	if ret := s.lib.GpmMetricsGet(req); ret != nvml.SUCCESS {
		s.faults.fail(name+"/gpm", fmt.Errorf("nvmlGpmMetricsGet: %s", nvmlErr(ret)), wanted)
		return
	}
	for k := uint32(0); k < req.NumMetrics; k++ {
		m := req.Metrics[k]
		for _, want := range nvmlGPMMetrics {
			if uint32(want.id) != m.MetricId {
				continue
			}
			key := name + "/" + want.q.String()
			if r := nvml.Return(m.NvmlReturn); r == nvml.ERROR_NOT_SUPPORTED {
				if want.q == qPCIeTxRate || want.q == qPCIeRxRate {
					// PCIe bytes from the cumulative counters from the next poll on.
					s.pcieGPM[i] = false
					continue
				}
				s.faults.notProvided(key, fmt.Sprintf("GPM metric %d: %s", m.MetricId, nvmlErr(r)))
				continue
			} else if r != nvml.SUCCESS {
				s.faults.fail(key, fmt.Errorf("GPM metric %d: %s", m.MetricId, nvmlErr(r)), 1)
				continue
			}
			if math.IsNaN(m.Value) || m.Value < 0 {
				s.faults.fail(key, fmt.Errorf("GPM metric %d: invalid value %v", m.MetricId, m.Value), 1)
				continue
			}
			s.faults.recover(key)
			add(want.q, m.Value*want.scale, 0)
		}
	}
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func (s *nvmlSource) poll(now time.Time, buf []sample) ([]sample, error) {
	ts := now.UnixMicro()
	for i, h := range s.handles {
		name := s.devs[i].name
		add := func(q quantity, f float64, u uint64) {
			buf = append(buf, sample{gpu: i, q: q, ts: ts, valid: true, f: f, u: u})
		}
		// read calls one NVML getter and reports whether the GPU is still there.
		read := func(q quantity, get func() (int, nvml.Return), scale float64) bool {
			if !s.want.has(q) {
				return true
			}
			v, ret := get()
			switch {
			case ret == nvml.SUCCESS && v >= 0:
				s.faults.recover(name + "/" + q.String())
				if scale == 0 {
					add(q, 0, uint64(v))
				} else {
					add(q, float64(v)*scale, 0)
				}
			case ret == nvml.ERROR_GPU_IS_LOST:
				s.faults.fail(name, errNVMLGPULost, 1)
				return false
			case ret == nvml.ERROR_NOT_SUPPORTED:
				s.faults.notProvided(name+"/"+q.String(), "NVML: "+nvmlErr(ret))
			default:
				s.faults.fail(name+"/"+q.String(), fmt.Errorf("NVML: %s", nvmlErr(ret)), 1)
			}
			return true
		}

		// GPM first: a GPU whose GPM turns out to lack the PCIe metrics reads the counters at once.
		s.readGPM(i, h, add)
		if !s.readCounters(i, h, ts, &buf) {
			continue
		}
		if !s.readLinks(i, h, ts, &buf) {
			continue
		}
		if s.want.has(qGPUUtil) || s.want.has(qMemCopyUtil) {
			u, ret := h.GetUtilizationRates()
			switch ret {
			case nvml.SUCCESS:
				if s.want.has(qGPUUtil) {
					add(qGPUUtil, float64(u.Gpu)/100, 0)
				}
				if s.want.has(qMemCopyUtil) {
					add(qMemCopyUtil, float64(u.Memory)/100, 0)
				}
			case nvml.ERROR_GPU_IS_LOST:
				s.faults.fail(name, errNVMLGPULost, 2)
				continue
			case nvml.ERROR_NOT_SUPPORTED:
				s.faults.notProvided(name+"/utilization", "nvmlDeviceGetUtilizationRates: "+nvmlErr(ret))
			default:
				s.faults.fail(name+"/utilization", fmt.Errorf("nvmlDeviceGetUtilizationRates: %s", nvmlErr(ret)), 2)
			}
		}
		_ = read(qPCIeReplays, h.GetPcieReplayCounter, 0) &&
			read(qPCIeLinkGen, h.GetCurrPcieLinkGeneration, 0) &&
			read(qPCIeLinkWidth, h.GetCurrPcieLinkWidth, 0) &&
			read(qPCIeMaxLinkGen, h.GetMaxPcieLinkGeneration, 0) &&
			read(qPCIeMaxLinkWidth, h.GetMaxPcieLinkWidth, 0)
	}
	return buf, s.faults.take()
}

var errNVMLGPULost = errors.New("the GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)")

// readCounters reads the cumulative byte counters of one GPU in one nvmlDeviceGetFieldValues call.
// It returns false when the GPU is gone.
func (s *nvmlSource) readCounters(i int, h nvml.Device, ts int64, buf *[]sample) bool {
	s.fields = s.fields[:0]
	for _, f := range nvmlCounterFields {
		pcie := f.q == qPCIeTxBytes || f.q == qPCIeRxBytes
		if pcie && s.pcieGPM[i] {
			continue
		}
		if s.want.has(f.q) && (f.nvlink5 == s.nvlink5[i] || pcie) {
			s.fields = append(s.fields, nvml.FieldValue{FieldId: f.id, ScopeId: f.scope})
		}
	}
	if len(s.fields) == 0 {
		return true
	}
	name := s.devs[i].name
	if filled, lost := s.getFieldValues(i, h, s.fields, "field_values"); !filled {
		return !lost
	}
	type failure struct {
		key          string
		err          error
		notSupported bool
	}
	var failed []failure
	throughputUnsupported := 0
	for _, fv := range s.fields {
		for _, f := range nvmlCounterFields {
			if f.id != fv.FieldId {
				continue
			}
			key := name + "/" + f.q.String()
			if r := nvml.Return(fv.NvmlReturn); r != nvml.SUCCESS {
				if r == nvml.ERROR_NOT_SUPPORTED && f.scale == 1024 && !s.nvlink5[i] {
					throughputUnsupported++
				}
				failed = append(failed, failure{key, fmt.Errorf("NVML field %d: %s", f.id, nvmlErr(r)), r == nvml.ERROR_NOT_SUPPORTED})
				continue
			}
			v, ok := nvmlFieldUint(fv)
			if !ok {
				s.faults.fail(key, fmt.Errorf("NVML field %d: unexpected value type %d", f.id, fv.ValueType), 1)
				continue
			}
			s.faults.recover(key)
			smp := sample{gpu: i, q: f.q, ts: ts, valid: true, u: v * f.scale}
			if nvml.ValueType(fv.ValueType) == nvml.VALUE_TYPE_UNSIGNED_INT {
				// "Value can be wrapped" (nvml.h, FI_DEV_PCIE_COUNT_*): at the width of its
				// type, 2^32 of its unit (scale 1024 for KiB: 2^42 bytes).
				smp.wrapBits = 32 + uint8(bits.TrailingZeros64(f.scale))
			}
			*buf = append(*buf, smp)
		}
	}
	if throughputUnsupported == 2 {
		// Neither THROUGHPUT_DATA field: not NVLink4 or older, maybe NVLink5. Its byte totals
		// are read from the next poll on; what they cannot give is said then.
		s.nvlink5[i] = true
		failed = slices.DeleteFunc(failed, func(f failure) bool {
			return strings.HasSuffix(f.key, "/"+qNVLinkTxBytes.String()) || strings.HasSuffix(f.key, "/"+qNVLinkRxBytes.String())
		})
	}
	for _, f := range failed {
		if f.notSupported {
			s.faults.notProvided(f.key, f.err.Error())
		} else {
			s.faults.fail(f.key, f.err, 1)
		}
	}
	return true
}

// getFieldValues asks NVML for fields of GPU i in one nvmlDeviceGetFieldValues call. filled says
// whether NVML filled the values; a failed call costs their points, said under key, and lost says
// the GPU has fallen off the bus.
func (s *nvmlSource) getFieldValues(i int, h nvml.Device, fields []nvml.FieldValue, key string) (filled, lost bool) {
	name := s.devs[i].name
	switch ret := h.GetFieldValues(fields); ret {
	case nvml.SUCCESS:
		return true, false
	case nvml.ERROR_GPU_IS_LOST:
		s.faults.fail(name, errNVMLGPULost, len(fields))
		return false, true
	default:
		s.faults.fail(name+"/"+key, fmt.Errorf("nvmlDeviceGetFieldValues: %s", nvmlErr(ret)), len(fields))
		return false, false
	}
}

// nvmlFieldUint decodes an unsigned field value (nvmlValue_t is a union; the value type says which
// member is set, little-endian on every platform NVML runs on that go-nvml supports).
func nvmlFieldUint(fv nvml.FieldValue) (uint64, bool) {
	switch nvml.ValueType(fv.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG:
		return binary.LittleEndian.Uint64(fv.Value[:]), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return uint64(binary.LittleEndian.Uint32(fv.Value[:4])), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		v := int64(binary.LittleEndian.Uint64(fv.Value[:]))
		return uint64(v), v >= 0
	}
	return 0, false
}

func (s *nvmlSource) close() error {
	freeGPM(s.gpm)
	s.gpm = nil
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvmlShutdown: %s", nvmlErr(ret))
	}
	return nil
}

// nvmlLinkRequest is one per-link field asked of NVML: the quantity, the link and the unit.
type nvmlLinkRequest struct {
	q     quantity
	link  uint32
	scale uint64
}

// nvmlLinkFields are the per-link fields, each asked with the link as scopeId (nvml.h: "Link ID
// needs to be specified in the scopeId field"): data bytes (138/139 in KiB, or on NVLink5 202/204
// in bytes) and the data-link error counters NVML_FI_DEV_NVLINK_ERROR_DL_CRC / _DL_REPLAY /
// _DL_RECOVERY (163/161/162; "unsupported for Blackwell+").
func (s *nvmlSource) nvmlLinkFields(i int) []struct {
	id    uint32
	q     quantity
	scale uint64
} {
	tx, rx, scale := uint32(nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX), uint32(nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX), uint64(1024)
	if s.nvlink5[i] {
		tx, rx, scale = nvml.FI_DEV_NVLINK_COUNT_XMIT_BYTES, nvml.FI_DEV_NVLINK_COUNT_RCV_BYTES, 1
	}
	return []struct {
		id    uint32
		q     quantity
		scale uint64
	}{
		{tx, qNVLinkLinkTxBytes, scale}, {rx, qNVLinkLinkRxBytes, scale},
		{nvml.FI_DEV_NVLINK_ERROR_DL_CRC, qNVLinkLinkCRCErrors, 1},
		{nvml.FI_DEV_NVLINK_ERROR_DL_REPLAY, qNVLinkLinkReplays, 1},
		{nvml.FI_DEV_NVLINK_ERROR_DL_RECOVERY, qNVLinkLinkRecoveries, 1},
	}
}

// readLinks reads the per-link counters of one GPU in one nvmlDeviceGetFieldValues call (only the
// enabled per-link metrics' fields). It returns false when the GPU is gone.
func (s *nvmlSource) readLinks(i int, h nvml.Device, ts int64, buf *[]sample) bool {
	s.linkFields, s.linkReqs = s.linkFields[:0], s.linkReqs[:0]
	for _, f := range s.nvmlLinkFields(i) {
		if !s.want.has(f.q) {
			continue
		}
		for l := uint32(0); l < uint32(s.links[i]); l++ {
			s.linkFields = append(s.linkFields, nvml.FieldValue{FieldId: f.id, ScopeId: l})
			s.linkReqs = append(s.linkReqs, nvmlLinkRequest{f.q, l, f.scale})
		}
	}
	if len(s.linkFields) == 0 {
		return true
	}
	name := s.devs[i].name
	if filled, lost := s.getFieldValues(i, h, s.linkFields, "nvlink_links"); !filled {
		return !lost
	}
	for k, fv := range s.linkFields {
		r := s.linkReqs[k]
		// One line per quantity, not per link: 18 links answer alike.
		key := name + "/" + r.q.String()
		if ret := nvml.Return(fv.NvmlReturn); ret == nvml.ERROR_NOT_SUPPORTED {
			s.faults.notProvided(key, fmt.Sprintf("NVML field %d: %s", fv.FieldId, nvmlErr(ret)))
			continue
		} else if ret != nvml.SUCCESS {
			s.faults.fail(key, fmt.Errorf("NVML field %d link %d: %s", fv.FieldId, r.link, nvmlErr(ret)), 1)
			continue
		}
		v, ok := nvmlFieldUint(fv)
		if !ok {
			s.faults.fail(key, fmt.Errorf("NVML field %d link %d: unexpected value type %d", fv.FieldId, r.link, fv.ValueType), 1)
			continue
		}
		smp := sample{gpu: i, q: r.q, ts: ts, valid: true, u: v * r.scale, entity: r.link}
		if nvml.ValueType(fv.ValueType) == nvml.VALUE_TYPE_UNSIGNED_INT {
			smp.wrapBits = 32 + uint8(bits.TrailingZeros64(r.scale))
		}
		*buf = append(*buf, smp)
	}
	return true
}
