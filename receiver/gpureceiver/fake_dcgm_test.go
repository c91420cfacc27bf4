package gpureceiver

import (
	"fmt"
	"slices"
	"time"
)

// fakeDCGM is a pure-Go stand-in for go-dcgm behind dcgmAPI. It follows what go-dcgm v1.4611.0 and
// DCGM do (go-dcgm pkg/dcgm/admin.go, field_values.go; DCGM dcgm_structs.h): every call but connect panics unless connect succeeded (the real
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
	// groups gives a profiling field's metric group, majorId<<16 | minorId
	// (dcgmProfMetricGroupInfo_v2).
	groups   map[uint16]uint32
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

	// hopper, when set, models a DCGM 4.6 hostengine on GPM GPUs (see newFakeDCGMHopper).
	hopper *hopperModel
	// latestCalls counts cached (not live) latest-value reads: one per scrape.
	latestCalls int
	// valueCap > 0 fails a GetValuesSince that would return more values, as go-dcgm does at
	// 131072 (pkg/dcgm/field_values.go maxCallbackValues, "field value limit exceeded").
	valueCap int
	// keepAges records the maxKeepAge of every watch.
	keepAges []time.Duration
	// mig lists the MIG instances (dcgmGetGpuInstanceHierarchy); migErr fails the call, as
	// DCGM does on GPUs without MIG support. migWatches holds the MIG watches' fields.
	mig        []dcgmEntity
	migErr     error
	migWatches map[dcgmWatchID]bool
	// links is what dcgmGetNvLinkLinkStatus answers: per GPU, the links whose state is not
	// NotSupported; linksErr fails it, linkCalls counts the calls. linkWatches holds the link
	// watches' links, and linkWatchErr fails them.
	links        map[uint][]uint16
	linksErr     error
	linkCalls    int
	linkWatches  map[dcgmWatchID][]dcgmLink
	linkWatchErr error
}

// hopperModel is what a DCGM 4.6 hostengine does on Hopper/Blackwell (GPM) GPUs:
//   - dcgmProfGetSupportedMetricGroups answers with three fixed field ranges on every GPM GPU,
//     whatever the hardware and driver support (DCGM 4.6 modules/core/DcgmModuleCore.cpp
//     ProcessProfGetMetricGroups, lines 2246-2293): 1001-1034, 1040-1083 (NVLink, C2C), and
//     1084-1096 (the cumulative cycle counters and 1091/1092 PCIE_TX/RX_BYTES_TOTAL);
//   - a GPM field is blank until two GPM samples exist (DCGM testing/python3/tests/test_prof.py
//     1328-1337), and stays blank when the driver's NVML has no such GPM metric: 1091/1092 map to
//     NVML_GPM_METRIC_PCIE_TX/RX (dcgm_fields.cpp 6824-6828), new in the CUDA 13.2 nvml.h; on an
//     NVML error the value stays DCGM_FP64_BLANK, served as DCGM_INT64_BLANK
//     (DcgmGpmManager.cpp 307-314, DcgmCacheManager.cpp 14094-14114).
type hopperModel struct {
	// pcieCounter: the driver's NVML has NVML_GPM_METRIC_PCIE_TX/RX (255/256).
	pcieCounter bool
	// bootTx/bootRx: what the since-boot PCIe counters held when the receiver started.
	bootTx, bootRx int64
	// txRate/rxRate in bytes/s, interval between latest reads.
	txRate, rxRate int64
	interval       int64 // s
}

// hopperProfFields is the three fixed ranges DCGM 4.6 lists on every GPM GPU.
func hopperProfFields() []uint16 {
	var out []uint16
	for _, r := range [][2]uint16{{1001, 1034}, {1040, 1083}, {1084, 1096}} {
		for id := r[0]; id <= r[1]; id++ {
			out = append(out, id)
		}
	}
	return out
}

// newFakeDCGMHopper is a DCGM 4.6 hostengine with n H100s; pcieCounter says whether the
// driver's NVML has the GPM PCIe byte counters.
func newFakeDCGMHopper(n int, pcieCounter bool) *fakeDCGM {
	f := newFakeDCGM(n)
	f.hopper = &hopperModel{pcieCounter: pcieCounter, bootTx: 5_000_000_000_000, bootRx: 7_000_000_000_000,
		txRate: 3_000_000, rxRate: 1_000_000, interval: 10}
	for _, g := range f.gpus {
		f.prof[g] = hopperProfFields()
		f.setInt(g, dcgmFieldC2CLinkCount, 0) // an H100 SXM: NVLink, no C2C
	}
	return f
}

// hopperLatest serves a GPM counter: blank for the first two GPM samples, and forever where the
// driver lacks the metric; else the since-boot total at that read.
func (f *fakeDCGM) hopperLatest(field uint16) (dcgmValue, bool) {
	h := f.hopper
	if h == nil || (field != dcgmFieldPCIeTxTotal && field != dcgmFieldPCIeRxTotal) {
		return dcgmValue{}, false
	}
	blank := dcgmValue{fieldType: dcgmTypeInt64, i: dcgmInt64Blank, ts: int64(f.latestCalls)}
	if !h.pcieCounter || f.latestCalls < 2 {
		return blank, true
	}
	elapsed := int64(f.latestCalls) * h.interval
	v := h.bootTx + h.txRate*elapsed
	if field == dcgmFieldPCIeRxTotal {
		v = h.bootRx + h.rxRate*elapsed
	}
	return dcgmValue{fieldType: dcgmTypeInt64, i: v, ts: int64(f.latestCalls)}, true
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

func (f *fakeDCGM) profilingFields(gpu uint) ([]uint16, map[uint16]uint32, error) {
	f.mustBeConnected()
	if f.profErr != nil {
		return nil, nil, f.profErr
	}
	groups := map[uint16]uint32{}
	for _, id := range f.prof[gpu] {
		groups[id] = f.groups[id] // 0 where not set: one group, as on a GPM GPU
	}
	return f.prof[gpu], groups, nil
}

func (f *fakeDCGM) latestValues(gpus []uint, fields []uint16, live bool) ([]dcgmValue, error) {
	f.mustBeConnected()
	if f.latestErr != nil && !live {
		return nil, f.latestErr
	}
	if !live {
		f.latestCalls++
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
				if hv, isGPM := f.hopperLatest(fid); isGPM {
					v, ok = hv, true
				}
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

func (f *fakeDCGM) watch(_ string, _ []uint, fields []uint16, _, keep time.Duration, _ int32) (dcgmWatchID, error) {
	f.mustBeConnected()
	f.keepAges = append(f.keepAges, keep)
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
	links, isLinkWatch := f.linkWatches[w]
	for _, v := range f.history {
		mig := v.entity == dcgmFEGPUI || v.entity == dcgmFEGPUCI
		if mig != f.migWatches[w] || (v.entity == dcgmFELink) != isLinkWatch {
			continue // a GPU watch serves GPU values, a MIG watch the instances', a link watch the links'
		}
		if l, _ := parseDCGMLink(v.gpu); isLinkWatch && !slices.Contains(links, l) {
			continue
		}
		if v.ts >= since && slices.Contains(fields, v.field) {
			out = append(out, v)
			next = max(next, v.ts+1)
		}
	}
	if f.valueCap > 0 && len(out) > f.valueCap {
		return nil, 0, &dcgmError{op: "reading samples", msg: fmt.Sprintf("field value limit exceeded (%d), reduce time range, field count, or entity count", f.valueCap)}
	}
	return out, next, nil
}

func (f *fakeDCGM) migEntities() ([]dcgmEntity, error) {
	f.mustBeConnected()
	return slices.Clone(f.mig), f.migErr
}

func (f *fakeDCGM) watchMIG(_ string, _ []dcgmEntity, fields []uint16, _, _ time.Duration) (dcgmWatchID, error) {
	f.mustBeConnected()
	f.nextID++
	f.watches[f.nextID] = slices.Clone(fields)
	if f.migWatches == nil {
		f.migWatches = map[dcgmWatchID]bool{}
	}
	f.migWatches[f.nextID] = true
	return f.nextID, nil
}

func (f *fakeDCGM) nvlinkLinks() (map[uint][]uint16, error) {
	f.mustBeConnected()
	f.linkCalls++
	return f.links, f.linksErr
}

func (f *fakeDCGM) watchLinks(_ string, links []dcgmLink, fields []uint16, _, _ time.Duration) (dcgmWatchID, error) {
	f.mustBeConnected()
	if f.linkWatchErr != nil {
		return 0, f.linkWatchErr
	}
	f.nextID++
	f.watches[f.nextID] = slices.Clone(fields)
	if f.linkWatches == nil {
		f.linkWatches = map[dcgmWatchID][]dcgmLink{}
	}
	f.linkWatches[f.nextID] = slices.Clone(links)
	return f.nextID, nil
}

func (f *fakeDCGM) unwatch(w dcgmWatchID) error {
	f.mustBeConnected()
	delete(f.watches, w)
	delete(f.linkWatches, w)
	return nil
}

// addLinkSample appends one sample of a field read on a link's DCGM_FE_LINK entity.
func (f *fakeDCGM) addLinkSample(gpu uint, link uint16, field uint16, ts int64, v int64) {
	raw := dcgmLink{gpu: gpu, index: link}.raw()
	f.history = append(f.history, dcgmValue{gpu: raw, entity: dcgmFELink, field: field, fieldType: dcgmTypeInt64, ts: ts, i: v})
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
