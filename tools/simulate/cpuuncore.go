package simulate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// The simulated nodes' CPUs are the 2-socket Skylake-SP of the cpuuncore receiver's `skx`
// fixture (receiver/cpuuncorereceiver/testdata/skx, laid out after the kernel's uncore_snbep.c).
// The recording carries that host tree; the counts come from the traffic model, through the
// fixture's own event encodings and scales, so nothing about SKX is written twice.

// uncoreEvent is one counter the receiver opens on the simulated host.
type uncoreEvent struct {
	cpu    int
	pmu    string
	attr   perf.Attr
	bytes  float64 // bytes per count
	socket int
	// what it measures: "read", "write" (memory), "in", "out" (PCIe, with stack and port)
	kind        string
	stack, port int
}

// reading is the event's perf read after count counts in elapsed seconds, never multiplexed
// (enabled and running time equal).
func (e uncoreEvent) reading(count, elapsed float64) recording.PerfReading {
	ns := uint64(elapsed * 1e9)
	return recording.PerfReading{CPU: e.cpu, PMU: e.pmu, Config: e.attr.Config, Config1: e.attr.Config1, Config2: e.attr.Config2,
		Value: uint64(count), Enabled: ns, Running: ns}
}

// uncoreHost is the simulated host: its tree and its counters.
type uncoreHost struct {
	tree   []recording.Entry
	events []uncoreEvent
	// stacks is the number of IIO stacks per socket; IMCs the number of memory controllers.
	imcs int
}

// gpuStack and gpuPort are where the GPU (and the NIC on its switch) attach: IIO stack 1, port 0
// of socket 0 (root bus 0x17, root port 0000:17:00.0 in the fixture's die0 mapping). A misplaced
// NIC is on the same stack and port of socket 1 (root bus 0x85); the other root port is stack 2,
// port 0 of socket 0 (root bus 0x3a).
const gpuStack, gpuPort = 1, 0
const otherStack = 2

// rootPortBytes is what one IIO part carries: the GPU's root port's, the NIC's and the other's.
func rootPortBytes(tr scenario.Traffic, e uncoreEvent, gpu, nic, other float64) float64 {
	var b float64
	if e.port != gpuPort {
		return 0
	}
	if e.socket == 0 && e.stack == gpuStack {
		b += gpu
	}
	nicSocket := 0
	if !tr.NICOnGPUSwitch {
		nicSocket = 1
	}
	if e.socket == nicSocket && e.stack == gpuStack {
		b += nic
	}
	if e.socket == 0 && e.stack == otherStack {
		b += other
	}
	return b
}

func loadUncoreHost(fixture string) (*uncoreHost, error) {
	tree, err := recording.Snapshot(fixture, []string{"sys", "proc"}, nil)
	if err != nil {
		return nil, fmt.Errorf("snapshot of %s: %w", fixture, err)
	}
	h := &uncoreHost{tree: tree}
	var r sysfs.Reader
	devices := filepath.Join(fixture, "sys", "bus", "event_source", "devices")
	names, err := perf.ListPMUs(devices)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		var events []string
		switch {
		case strings.HasPrefix(name, "uncore_imc_"):
			events = []string{"cas_count_read", "cas_count_write"}
			h.imcs++
		case strings.HasPrefix(name, "uncore_iio_free_running_"):
			for p := range 4 {
				events = append(events, fmt.Sprintf("bw_in_port%d", p), fmt.Sprintf("bw_out_port%d", p))
			}
		case strings.HasPrefix(name, "uncore_iio_"):
			// The programmable IIO events the cpuuncore receiver reads SKX transmit from (Intel
			// PCM's, perfmon UNC_IIO_DATA_REQ_OF_CPU.MEM_READ and DATA_REQ_BY_CPU.MEM_WRITE,
			// all four parts, 4 bytes a count: receiver/cpuuncorereceiver/events.go).
			if err := h.addProgrammable(&r, devices, name); err != nil {
				return nil, err
			}
			continue
		default:
			continue
		}
		pmu, err := perf.LoadPMU(&r, filepath.Join(devices, name))
		if err != nil {
			return nil, err
		}
		cpus, err := r.ReadString(filepath.Join(devices, name, "cpumask"))
		if err != nil {
			return nil, err
		}
		list, err := perf.ParseCPUList(cpus)
		if err != nil {
			return nil, err
		}
		for socket, cpu := range list {
			for _, e := range events {
				ev, err := pmu.Event(&r, e)
				if err != nil {
					return nil, err
				}
				bpc, ok := ev.BytesPerCount()
				if !ok {
					return nil, fmt.Errorf("%s/%s: no byte scale", name, e)
				}
				ue := uncoreEvent{cpu: cpu, pmu: name, attr: ev.Attr, bytes: bpc, socket: socket}
				switch {
				case e == "cas_count_read":
					ue.kind = "read"
				case e == "cas_count_write":
					ue.kind = "write"
				default:
					fmt.Sscanf(strings.TrimPrefix(name, "uncore_iio_free_running_"), "%d", &ue.stack)
					if strings.HasPrefix(e, "bw_in_port") {
						ue.kind = "in"
						fmt.Sscanf(strings.TrimPrefix(e, "bw_in_port"), "%d", &ue.port)
					} else {
						ue.kind = "out"
						fmt.Sscanf(strings.TrimPrefix(e, "bw_out_port"), "%d", &ue.port)
					}
				}
				h.events = append(h.events, ue)
			}
		}
	}
	if h.imcs == 0 {
		return nil, fmt.Errorf("%s has no uncore_imc PMU", fixture)
	}
	return h, nil
}

// programmableTransmit are the raw encodings of the SKX transmit events, stack-wide (ch_mask: the
// four parts), as the cpuuncore receiver opens them; mmio is the CPU's MMIO writes (none here).
var programmableTransmit = []struct{ raw, kind string }{
	{"event=0x83,umask=0x04,ch_mask=0xf,fc_mask=0x7", "out_stack"},
	{"event=0xc0,umask=0x01,ch_mask=0xf,fc_mask=0x7", "mmio"},
}

func (h *uncoreHost) addProgrammable(r *sysfs.Reader, devices, name string) error {
	pmu, err := perf.LoadPMU(r, filepath.Join(devices, name))
	if err != nil {
		return err
	}
	cpus, err := r.ReadString(filepath.Join(devices, name, "cpumask"))
	if err != nil {
		return err
	}
	list, err := perf.ParseCPUList(cpus)
	if err != nil {
		return err
	}
	var stack int
	fmt.Sscanf(strings.TrimPrefix(name, "uncore_iio_"), "%d", &stack)
	for socket, cpu := range list {
		for _, ev := range programmableTransmit {
			attr, err := pmu.EncodeString(ev.raw)
			if err != nil {
				return fmt.Errorf("%s %s: %w", name, ev.raw, err)
			}
			h.events = append(h.events, uncoreEvent{cpu: cpu, pmu: name, attr: attr, bytes: 4, socket: socket, kind: ev.kind, stack: stack, port: gpuPort})
		}
	}
	return nil
}

// uncoreCounters is the running state of every event of a node.
type uncoreCounters struct {
	counts  []float64
	elapsed float64
}

// socket1Share is the background on the idle socket, as a share of socket 0's.
const socket1Share = 0.2

// step advances every event by one interval and returns the Sample payload.
func (c *uncoreCounters) step(h *uncoreHost, tr scenario.Traffic, i, node int, dt float64) []byte {
	if c.counts == nil {
		c.counts = make([]float64, len(h.events))
	}
	c.elapsed += dt
	w := scenario.Wobble(i, node)
	out := make([]recording.PerfReading, len(h.events))
	for k, e := range h.events {
		var bytes float64
		share := 1.0
		if e.socket == 1 {
			share = socket1Share
		}
		switch e.kind {
		case "read":
			bytes = tr.MemRead * w * share / float64(h.imcs)
		case "write":
			bytes = tr.MemWrite * w * share / float64(h.imcs)
		case "in":
			bytes = rootPortBytes(tr, e, tr.CPUPCIeRx, tr.NICRootRx, tr.OtherRootRx) * w
		case "out", "out_stack":
			// A stack-wide event counts its four parts; only part 0 carries traffic here.
			bytes = rootPortBytes(tr, e, tr.CPUPCIeTx, tr.NICRootTx, tr.OtherRootTx) * w
		}
		c.counts[k] += bytes * dt / e.bytes
		out[k] = e.reading(c.counts[k], c.elapsed)
	}
	b, _ := json.Marshal(recording.PerfSample{Perf: out})
	return b
}
