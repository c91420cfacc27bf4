package simulate

import (
	"encoding/json"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// gpuFacts is the gpu receiver's Facts payload (internal/recording/FORMAT.md): one A100 per node,
// seen through DCGM.
func gpuFacts(node int, sample time.Duration) []byte {
	b, _ := json.Marshal(recording.GPUFacts{
		Source:           "dcgm",
		SampleIntervalUs: sample.Microseconds(),
		Devices: []recording.GPUDevice{{
			ID: 0, Name: "gpu0", UUID: "GPU-5f1d2c3b-0000-4000-8000-00000000000" + string(rune('1'+node)),
			Model: "NVIDIA A100 80GB PCIe", BusID: "0000:1a:00.0", NUMANode: 0,
		}},
	})
	return b
}

// gpuSample is one poll: DCGM's profiling rates (bytes/s averaged over the sample period, as
// DCGM_FI_PROF_PCIE_TX_BYTES really is), activity ratios and the link's generation and width.
func gpuSample(tr scenario.Traffic, i, node int, at time.Time) []byte {
	w := scenario.Wobble(i, node)
	ts := at.UnixMicro()
	f := func(q string, v float64) recording.GPUValue {
		return recording.GPUValue{Q: q, TS: ts, Valid: true, F: v}
	}
	u := func(q string, v uint64) recording.GPUValue {
		return recording.GPUValue{Q: q, TS: ts, Valid: true, U: v}
	}
	// An idle NVIDIA GPU runs its link at Gen1 to save power and retrains to its maximum under
	// load (nvidia-smi -q: "PCIe Generation Current").
	linkGen := uint64(4)
	if tr.SMActive == 0 {
		linkGen = 1
	}
	vals := []recording.GPUValue{
		f("pcie_tx_rate", tr.GPUPCIeTx*w),
		f("pcie_rx_rate", tr.GPUPCIeRx*w),
		f("dram_active", tr.DRAMActive*w),
		f("mem_copy_util", tr.DRAMActive*w*0.8),
		f("sm_active", tr.SMActive*w),
		f("gr_engine_active", min(1, tr.SMActive*w*1.3)),
		f("gpu_util", min(1, tr.SMActive*w*1.5)),
		u("pcie_link_gen", linkGen), u("pcie_max_link_gen", 4),
		u("pcie_link_width", tr.LinkWidthOfGPU()), u("pcie_max_link_width", 16),
		u("pcie_replays", 0),
	}
	if tr.XID != 0 && i%60 == 10 {
		vals = append(vals, u("xid", tr.XID))
	}
	b, _ := json.Marshal(recording.GPUSample{Samples: vals})
	return b
}
