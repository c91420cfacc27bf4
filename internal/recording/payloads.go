package recording

// The receiver-specific payloads of Record.Facts and Record.Sample (FORMAT.md), defined once so
// that the receivers that write and read them and the simulator that generates them agree.

// RNICSample is the rnic receiver's Sample: the ethtool statistics of each netdev, by name, and
// the drivers of the netdevs (as ETHTOOL_GDRVINFO names them) in the scrape that first read them.
type RNICSample struct {
	Ethtool        map[string]map[string]uint64 `json:"ethtool,omitempty"`
	EthtoolDrivers map[string]string            `json:"ethtool_drivers,omitempty"`
}

// PerfSample is the cpuuncore receiver's Sample: one entry per event read in the scrape.
type PerfSample struct {
	Perf []PerfReading `json:"perf"`
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
}
