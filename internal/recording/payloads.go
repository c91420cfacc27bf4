package recording

import "time"

// The receiver-specific payloads of Record.Facts and Record.Sample (FORMAT.md), defined once so
// that the receivers that write and read them and the simulator that generates them agree.

// RNICSample is the rnic receiver's Sample: the ethtool statistics of each netdev, by name, and
// the drivers of the netdevs (as ETHTOOL_GDRVINFO names them) in the scrape that first read them,
// and the fast sampler's sub-interval readings.
type RNICSample struct {
	Ethtool        map[string]map[string]uint64 `json:"ethtool,omitempty"`
	EthtoolDrivers map[string]string            `json:"ethtool_drivers,omitempty"`
	// Bursts are the fast sampler's byte counter readings since the previous scrape (absent in
	// recordings made without it, and in those made before it existed).
	Bursts *SubSamples `json:"bursts,omitempty"`
}

// PerfSample is the cpuuncore receiver's Sample: one entry per event read in the scrape.
type PerfSample struct {
	Perf []PerfReading `json:"perf"`
	// Bursts are the fast sampler's raw counts since the previous scrape, by event
	// ("uncore_imc_0@0:0xcf05:0x0:0x0": the PMU instance, the CPU and the config words), absent in
	// recordings made without it.
	Bursts *SubSamples `json:"bursts,omitempty"`
}

// PerfReading is one event's reading: the CPU the group counts on, the PMU by name (type numbers
// change between boots), the perf_event_attr config words, the raw 64-bit count and the group's
// time enabled / running in ns.
type PerfReading struct {
	CPU     int    `json:"cpu"`
	PMU     string `json:"pmu"`
	Config  uint64 `json:"config"`
	Config1 uint64 `json:"config1,omitempty"`
	Config2 uint64 `json:"config2,omitempty"`
	Value   uint64 `json:"value"`
	Enabled uint64 `json:"enabled"`
	Running uint64 `json:"running"`
}

// GPUFacts is the gpu receiver's Facts: the library and its GPUs.
type GPUFacts struct {
	Source string `json:"source"`
	// SampleIntervalUs is the library's sampling period; integrating rates needs it.
	SampleIntervalUs int64       `json:"sample_interval_us,omitempty"`
	Devices          []GPUDevice `json:"devices"`
}

// GPUDevice is one GPU as the library reported it.
type GPUDevice struct {
	ID       uint   `json:"id"`
	Name     string `json:"name"`
	UUID     string `json:"uuid,omitempty"`
	Model    string `json:"model,omitempty"`
	BusID    string `json:"pci_bus_id,omitempty"`
	NUMANode int64  `json:"numa_node"`
}

// GPUSample is the gpu receiver's Sample: every sample one poll returned.
type GPUSample struct {
	Samples []GPUValue `json:"samples"`
	// Bursts are the fast sampler's readings of the GPUs' PCIe byte counters since the previous
	// poll ("gpu0/pcie_tx_bytes", with "/ts_us" the library's timestamp and "/bits" a width below
	// 64), absent in recordings made without it.
	Bursts *SubSamples `json:"bursts,omitempty"`
}

// GPUValue is one sample; the quantity goes by name (FORMAT.md lists them).
type GPUValue struct {
	GPU   int     `json:"gpu"`
	Q     string  `json:"q"`
	TS    int64   `json:"ts_us"`
	Valid bool    `json:"valid"`
	F     float64 `json:"f,omitempty"`
	U     uint64  `json:"u,omitempty"`
	// Bits is the width of a counter that wraps (0: 64 bits, a decrease is a reset).
	Bits uint8 `json:"bits,omitempty"`
	// Entity is what within the GPU the value belongs to: a MIG instance (an XID raised inside
	// it) or an NVLink link; 0 for the GPU itself.
	Entity uint32 `json:"entity,omitempty"`
}

// SubSamples are the readings a receiver's fast sampler took between two scrapes (the rnic
// receiver's bursts.period), so that a replay folds exactly the recorded samples at their recorded
// times. Columnar: T holds each pass's time (Unix ns) and Files, per file (relative to the host
// root, as Record.Files names it), the raw value the pass read, as the file counts it (4-octet words
// for PMA data counters), or null where that read failed. Period is the sampler's configured
// period.
type SubSamples struct {
	Period Duration             `json:"period"`
	T      []int64              `json:"t_ns"`
	Files  map[string][]*uint64 `json:"files"`
}

// Add appends one pass taken at t: values by file. A file read in earlier passes and missing from
// this one is null here, one new in this pass is null in the earlier ones.
func (s *SubSamples) Add(t time.Time, values map[string]uint64) {
	n := len(s.T)
	if s.Files == nil {
		s.Files = map[string][]*uint64{}
	}
	for path, v := range values {
		col, ok := s.Files[path]
		if !ok {
			col = make([]*uint64, n, n+1)
		}
		v := v
		s.Files[path] = append(col, &v)
	}
	s.T = append(s.T, t.UnixNano())
	for path, col := range s.Files {
		if len(col) == n {
			s.Files[path] = append(col, nil)
		}
	}
}

// Len is the number of passes.
func (s *SubSamples) Len() int {
	if s == nil {
		return 0
	}
	return len(s.T)
}

// Value returns what pass i read from path, and whether that read succeeded. A column shorter
// than T (a file written by hand) reads as failed past its end.
func (s *SubSamples) Value(i int, path string) (uint64, bool) {
	col := s.Files[path]
	if i >= len(col) || col[i] == nil {
		return 0, false
	}
	return *col[i], true
}

// Time returns the time of pass i.
func (s *SubSamples) Time(i int) time.Time { return time.Unix(0, s.T[i]).UTC() }

// Retimed returns the passes at the times at maps theirs to (a replay's clock), sharing the
// values, which neither changes afterwards.
func (s *SubSamples) Retimed(at func(time.Time) time.Time) *SubSamples {
	if s == nil {
		return nil
	}
	out := &SubSamples{Period: s.Period, T: make([]int64, len(s.T)), Files: s.Files}
	for i := range s.T {
		out.T[i] = at(s.Time(i)).UnixNano()
	}
	return out
}
