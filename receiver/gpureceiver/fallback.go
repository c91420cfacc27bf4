package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"strings"
	"time"

	"go.uber.org/zap"
)

// nvmlFallback completes a DCGM source with NVML for the GPUs whose link bytes DCGM cannot supply
// while DCGM itself is up: the profiling module is not loaded (before Hopper it needs the
// proprietary package and a root hostengine), Nsight or CUPTI holds the counters, or the GPU is
// not DCP-capable (dcgm-exporter issues #22, #152, #398, #459). NVML's cumulative PCIe and NVLink
// counters stay available there (nvml.h FI_DEV_PCIE_COUNT_*, FI_DEV_NVLINK_THROUGHPUT_DATA_*).
// Only the quantities DCGM lacks are taken from NVML, matched to DCGM's GPU by PCI address (or
// UUID); everything else stays DCGM's.
type nvmlFallback struct {
	*dcgmSource
	logger *zap.Logger
	// open opens NVML; it is called at the first rediscovery that finds a GPU in need, and again
	// after a failure at the next one.
	open func() (source, error)
	nvml source
	// need[i] is what devices[i] takes from NVML; from maps an NVML device index to i.
	need []quantitySet
	from map[int]int
	// told is the last logged description per GPU.
	told map[string]string
	tmp  []sample
}

func withNVMLFallback(primary *dcgmSource, logger *zap.Logger, open func() (source, error)) *nvmlFallback {
	f := &nvmlFallback{dcgmSource: primary, logger: logger, open: open, told: map[string]string{}}
	f.plan()
	return f
}

// missingLinks is what DCGM reads neither as a rate nor as a counter for one GPU, as the NVML
// counter quantities that can stand in.
func missingLinks(want, reads quantitySet) quantitySet {
	var m quantitySet
	for _, l := range []struct{ rate, ctr quantity }{
		{qPCIeTxRate, qPCIeTxBytes}, {qPCIeRxRate, qPCIeRxBytes},
		{qNVLinkTxRate, qNVLinkTxBytes}, {qNVLinkRxRate, qNVLinkRxBytes},
	} {
		if (want.has(l.rate) || want.has(l.ctr)) && !reads.has(l.rate) && !reads.has(l.ctr) {
			m.add(l.ctr)
		}
	}
	return m
}

// plan works out which GPU needs what, opening or closing NVML accordingly.
func (f *nvmlFallback) plan() {
	devs := f.dcgmSource.devices()
	f.need = make([]quantitySet, len(devs))
	needed := false
	for i := range devs {
		f.need[i] = missingLinks(f.want, f.dcgmSource.plan.reads[i])
		needed = needed || f.need[i] != 0
	}
	if !needed {
		if f.nvml != nil {
			_ = f.nvml.close()
			f.nvml = nil
		}
		return
	}
	if f.nvml == nil {
		src, err := f.open()
		if err != nil {
			f.dcgmSource.faults.missing("nvml-fallback", err)
			return
		}
		f.dcgmSource.faults.recover("nvml-fallback")
		f.nvml = src
	}
	f.from = map[int]int{}
	for j, nd := range f.nvml.devices() {
		for i, d := range devs {
			if (nd.busID != "" && nd.busID == d.busID) || (nd.uuid != "" && nd.uuid == d.uuid) {
				f.from[j] = i
			}
		}
	}
	for i, d := range devs {
		var names []string
		for q := qPCIeTxBytes; q <= qNVLinkRxBytes; q++ {
			if f.need[i].has(q) {
				names = append(names, q.String())
			}
		}
		desc := strings.Join(names, ", ")
		if desc != "" && f.told[d.key()] != desc {
			f.logger.Info("GPU bytes that DCGM cannot supply are read through NVML", zap.String("device", d.name),
				zap.String("quantities", desc), zap.String("source", "counter NVML fields 197/198 (PCIe), 138/139 or 202/204 (NVLink)"))
		}
		f.told[d.key()] = desc
	}
}

func (f *nvmlFallback) refresh() error {
	err := f.dcgmSource.refresh()
	if f.dcgmSource.plan != nil {
		f.plan()
	}
	return err
}

func (f *nvmlFallback) poll(now time.Time, buf []sample) ([]sample, error) {
	buf, err := f.dcgmSource.poll(now, buf)
	if isSourceLost(err) || f.nvml == nil {
		return buf, err
	}
	// NVML trouble costs only the fallback series: its failures join DCGM's.
	var nerr error
	f.tmp, nerr = f.nvml.poll(now, f.tmp[:0])
	err = joinPollErrors(err, nerr)
	for _, smp := range f.tmp {
		i, ok := f.from[smp.gpu]
		if !ok || i >= len(f.need) || !f.need[i].has(smp.q) {
			continue
		}
		smp.gpu = i
		buf = append(buf, smp)
	}
	return buf, err
}

func (f *nvmlFallback) close() error {
	if f.nvml != nil {
		_ = f.nvml.close()
		f.nvml = nil
	}
	return f.dcgmSource.close()
}
