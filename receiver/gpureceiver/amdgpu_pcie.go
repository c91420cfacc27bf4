package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import "fmt"

// An AMD GPU's PCIe bytes come from two fields of its gpu_metrics table (smu_v13_0_6_ppt.c
// smu_v13_0_6_get_gpu_metrics): pcie_bandwidth_acc = SMUQ10_ROUND(PcieBandwidthAcc[0]) and
// accumulation_counter = AccumulationCounter. The firmware's metrics table
// (smu_v13_0_6_pmfw.h MetricsTableX_t) keeps, beside the bandwidth accumulators, byte
// accumulators of its own for XGMI (XgmiReadDataSizeAcc, "in KByte") next to
// XgmiReadBandwidthAcc: a *BandwidthAcc is therefore not bytes but the instantaneous GB/s summed
// once per accumulation cycle, as every other *_acc of the table is summed over the cycles
// accumulation_counter counts (amd-smi derives its throttle percentages from the *_residency_acc
// the same way: the growth of the accumulator over the growth of accumulation_counter). So the
// average over the span between two tables is
//
//	GB/s = (pcie_bandwidth_acc_2 - pcie_bandwidth_acc_1) / (accumulation_counter_2 - accumulation_counter_1)
//
// and the bytes are that rate over the span, which the receiver's integrator applies. Neither the
// kernel nor the firmware header states this, nor whether GB is 10^9 or 2^30 bytes (10^9 is
// taken, as PCIe rates are decimal), nor which directions the figure covers (it is served as
// direction=both): `make device-check` compares it with a copy of known bytes
// (gpu_amd_xgmi_pcie_bandwidth).

// amdPCIeMaxRate bounds a believable average: twice the 128 GB/s one direction of a PCIe 6.0 x16
// link carries. A greater one is a table that went wrong, not traffic.
const amdPCIeMaxRate = 2 * 128e9

// amdPCIeReading is one table's pcie_bandwidth_acc and accumulation_counter.
type amdPCIeReading struct {
	acc, cycles uint64
	// bits is accumulation_counter's width, at which it wraps.
	bits uint8
}

// amdPCIeStep is what two consecutive readings give.
type amdPCIeStep int

const (
	// amdPCIeRated: a rate over the span between them.
	amdPCIeRated amdPCIeStep = iota
	// amdPCIeSame: the firmware has not accumulated since the earlier one (the driver serves its
	// cached table); the earlier reading stays the baseline, so the next rate covers this span too.
	amdPCIeSame
	// amdPCIeRestart: no rate; the later reading is the new baseline (a GPU reset cleared the
	// accumulators, or the values are not believable).
	amdPCIeRestart
)

// amdPCIeRate returns the average bytes/s between prev and cur. err says why a restart was not a
// reset (an average no PCIe link carries).
func amdPCIeRate(prev, cur amdPCIeReading) (float64, amdPCIeStep, error) {
	if cur.acc < prev.acc {
		return 0, amdPCIeRestart, nil // the accumulators start over after a GPU reset
	}
	cycles := cur.cycles - prev.cycles
	if cur.cycles < prev.cycles {
		if cur.bits == 0 || cur.bits >= 64 || prev.bits != cur.bits {
			return 0, amdPCIeRestart, nil
		}
		cycles = cur.cycles + (uint64(1)<<cur.bits - prev.cycles) // accumulation_counter wrapped
	}
	if cycles == 0 {
		if cur.acc != prev.acc {
			return 0, amdPCIeRestart, fmt.Errorf("pcie_bandwidth_acc grew by %d while accumulation_counter stayed at %d: not served until they agree", cur.acc-prev.acc, cur.cycles)
		}
		return 0, amdPCIeSame, nil
	}
	rate := float64(cur.acc-prev.acc) / float64(cycles) * 1e9
	if rate > amdPCIeMaxRate {
		return 0, amdPCIeRestart, fmt.Errorf("pcie_bandwidth_acc grew by %d over %d accumulation cycles, an average of %.0f GB/s, more than a PCIe link carries: not served", cur.acc-prev.acc, cycles, rate/1e9)
	}
	return rate, amdPCIeRated, nil
}
