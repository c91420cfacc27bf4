package gpureceiver

import (
	"fmt"
	"slices"
	"time"
)

// fakeDCGM is a pure-Go stand-in for go-dcgm behind dcgmAPI. It follows what go-dcgm v1.4611.0 and
// DCGM do (research/gpu.md §1): every call but connect panics unless connect succeeded (the real
// library kills the process with a symbol lookup error), GetValuesSince returns the samples newer
// than the cursor with the next cursor, per-value statuses and blank sentinels are those of
// dcgm_structs.h, and profiling support is per GPU (dcgmProfGetSupportedMetricGroups).
type fakeDCGM struct {
	connectErr error
	connected  bool
	connects   int

	gpus     []uint
	identity map[uint][3]string // name, uuid, bus id
	prof     map[uint][]uint16
	profErr  error
	watchErr func(fields []uint16) error

	// history holds the samples GetValuesSince serves, in time order.
	history []dcgmValue
	// latest holds the newest value per GPU and field.
	latest map[uint]map[uint16]dcgmValue

	historyErr error
	latestErr  error

	watches map[dcgmWatchID][]uint16
	nextID  dcgmWatchID
	// sinceCalls counts GetValuesSince calls.
	sinceCalls int
}

func newFakeDCGM(n int) *fakeDCGM {
	f := &fakeDCGM{
		identity: map[uint][3]string{},
		prof:     map[uint][]uint16{},
		latest:   map[uint]map[uint16]dcgmValue{},
		watches:  map[dcgmWatchID][]uint16{},
	}
	for i := 0; i < n; i++ {
		id := uint(i)
		f.gpus = append(f.gpus, id)
		// DCGM_FI_DEV_PCI_BUS_ID comes as NVML prints it: 8-digit domain, upper-case hex.
		f.identity[id] = [3]string{"NVIDIA H100 80GB HBM3", fmt.Sprintf("GPU-%08x-0000-0000-0000-000000000000", i), fmt.Sprintf("00000000:%02X:00.0", 0x1b+i*0x20)}
		f.prof[id] = []uint16{dcgmFieldGREngineActive, dcgmFieldSMActive, dcgmFieldDRAMActive,
			dcgmFieldPCIeTxRate, dcgmFieldPCIeRxRate, dcgmFieldNVLinkTxRate, dcgmFieldNVLinkRxRate}
		f.latest[id] = map[uint16]dcgmValue{}
	}
	return f
}

func (f *fakeDCGM) mustBeConnected() {
	if !f.connected {
		panic("libdcgm call without a successful Init: the real process would die with a symbol lookup error")
	}
}

func (f *fakeDCGM) connect(DCGMConfig) error {
	f.connects++
	if f.connectErr != nil {
		return f.connectErr
	}
	f.connected = true
	return nil
}

func (f *fakeDCGM) disconnect() error {
	f.mustBeConnected()
	f.connected = false
	return nil
}

func (f *fakeDCGM) supportedGPUs() ([]uint, error) {
	f.mustBeConnected()
	return slices.Clone(f.gpus), nil
}

func (f *fakeDCGM) profilingFields(gpu uint) ([]uint16, error) {
	f.mustBeConnected()
	if f.profErr != nil {
		return nil, f.profErr
	}
	return f.prof[gpu], nil
}

func (f *fakeDCGM) latestValues(gpus []uint, fields []uint16, live bool) ([]dcgmValue, error) {
	f.mustBeConnected()
	if f.latestErr != nil && !live {
		return nil, f.latestErr
	}
	var out []dcgmValue
	for _, g := range gpus {
		for _, fid := range fields {
			switch {
			case fid == dcgmFieldGPUName || fid == dcgmFieldGPUUUID || fid == dcgmFieldPCIBusID:
				idx := map[uint16]int{dcgmFieldGPUName: 0, dcgmFieldGPUUUID: 1, dcgmFieldPCIBusID: 2}[fid]
				out = append(out, dcgmValue{gpu: g, field: fid, fieldType: dcgmTypeString, s: f.identity[g][idx]})
			default:
				v, ok := f.latest[g][fid]
				if !ok {
					// An unwatched field with no data: DCGM answers with a blank.
					v = dcgmValue{fieldType: dcgmTypeInt64, i: dcgmInt64Blank}
				}
				v.gpu, v.field = g, fid
				out = append(out, v)
			}
		}
	}
	return out, nil
}

func (f *fakeDCGM) watch(_ string, _ []uint, fields []uint16, _, _ time.Duration, _ int32) (dcgmWatchID, error) {
	f.mustBeConnected()
	if f.watchErr != nil {
		if err := f.watchErr(fields); err != nil {
			return 0, err
		}
	}
	f.nextID++
	f.watches[f.nextID] = slices.Clone(fields)
	return f.nextID, nil
}

func (f *fakeDCGM) valuesSince(w dcgmWatchID, since int64) ([]dcgmValue, int64, error) {
	f.mustBeConnected()
	f.sinceCalls++
	if f.historyErr != nil {
		return nil, 0, f.historyErr
	}
	fields := f.watches[w]
	var out []dcgmValue
	next := since
	for _, v := range f.history {
		if v.ts >= since && slices.Contains(fields, v.field) {
			out = append(out, v)
			next = max(next, v.ts+1)
		}
	}
	return out, next, nil
}

func (f *fakeDCGM) unwatch(w dcgmWatchID) error {
	f.mustBeConnected()
	delete(f.watches, w)
	return nil
}

// addRates appends one sample of an int64 rate field per GPU at ts.
func (f *fakeDCGM) addSample(gpu uint, field uint16, ts int64, v int64) {
	f.history = append(f.history, dcgmValue{gpu: gpu, field: field, fieldType: dcgmTypeInt64, ts: ts, i: v})
}

func (f *fakeDCGM) setInt(gpu uint, field uint16, v int64) {
	f.latest[gpu][field] = dcgmValue{fieldType: dcgmTypeInt64, i: v, ts: 1}
}

func (f *fakeDCGM) setDouble(gpu uint, field uint16, v float64) {
	f.latest[gpu][field] = dcgmValue{fieldType: dcgmTypeDouble, f: v, ts: 1}
}
