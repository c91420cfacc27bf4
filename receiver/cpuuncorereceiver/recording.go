package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// The cpuuncore receiver records at two seams (internal/recording/FORMAT.md): the sysfs and /proc
// files discovery reads, as a Tree (PMUs with their formats and events, CPU topology, the PCI
// tree below the root buses, cpuinfo); and every perf counter read, one entry per event, as the
// Sample of the scrape. Replay materializes the tree, points discovery at it, and answers every
// group read from the recorded counts, so that discovery, corrections, scaling and metrics run as
// they do live.

// eventKey identifies an event across record and replay: the PMU by name (its type number is
// assigned at boot), the encoding, the CPU it counts on.
type eventKey struct {
	cpu                      int
	pmu                      string
	config, config1, config2 uint64
}

// pmuNames maps PMU type numbers to names from <root>/sys/bus/event_source/devices/*/type.
func pmuNames(root string) map[uint32]string {
	dir := filepath.Join(root, "sys", "bus", "event_source", "devices")
	entries, _ := os.ReadDir(dir)
	var r sysfs.Reader
	out := make(map[uint32]string, len(entries))
	for _, e := range entries {
		if t, err := r.ReadUint(filepath.Join(dir, e.Name(), "type")); err == nil {
			out[uint32(t)] = e.Name()
		}
	}
	return out
}

// snapshotHost records what discovery reads: the PMUs, the CPU topology, the PCI tree's functions
// with their NUMA nodes, cpuinfo and resctrl's monitoring files.
func snapshotHost(root string) ([]recording.Entry, error) {
	pciDirs, _ := filepath.Glob(filepath.Join(root, "sys", "devices", "pci*"))
	paths := []string{"sys/bus/event_source/devices", "sys/devices/system/cpu", "proc/cpuinfo", "sys/fs/resctrl/info/L3_MON", "sys/fs/resctrl/mon_data"}
	for _, d := range pciDirs {
		rel, _ := filepath.Rel(root, d)
		paths = append(paths, rel)
	}
	entries, err := recording.Snapshot(root, paths, skipHostPath)
	// Parts of sysfs refuse to be read (write-only attributes): the snapshot keeps what it got.
	return entries, err
}

var (
	cpuDirRE = regexp.MustCompile(`^cpu[0-9]+$`)
	nodeRE   = regexp.MustCompile(`^node[0-9]+$`)
)

// skipHostPath keeps a snapshot to what discovery reads; the rest of sysfs is large and private.
func skipHostPath(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	switch {
	case strings.HasPrefix(rel, "sys/devices/system/cpu/"):
		// cpu<N>/topology/{physical_package_id,die_id} and the cpu<N>/node<M> links.
		if len(parts) < 5 {
			return false
		}
		if !cpuDirRE.MatchString(parts[4]) {
			return parts[4] != "online"
		}
		if len(parts) == 5 {
			return false
		}
		if nodeRE.MatchString(parts[5]) && len(parts) == 6 {
			return false
		}
		if parts[5] != "topology" {
			return true
		}
		return len(parts) == 7 && parts[6] != "physical_package_id" && parts[6] != "die_id"
	case strings.HasPrefix(rel, "sys/devices/system/node/"):
		return len(parts) > 5 // the node directories themselves, for the cpu links
	case len(parts) >= 3 && parts[0] == "sys" && parts[1] == "devices" && pci.IsRootBus(parts[2]):
		last := parts[len(parts)-1]
		if pci.IsAddress(last) || pci.IsRootBus(last) {
			return false
		}
		return last != "numa_node" && last != "class" && last != "vendor" && last != "device"
	case len(parts) >= 3 && parts[0] == "sys" && parts[1] == "devices":
		// A PMU's directory: type, cpumask, format/, events/, dieN mappings; not its power/ or
		// subsystem/ links.
		return len(parts) >= 4 && (parts[3] == "power" || parts[3] == "subsystem" || parts[3] == "uevent")
	}
	return false
}

// recordingOpener passes groups through to the real opener and collects their reads.
type recordingOpener struct {
	inner perf.Opener
	names map[uint32]string
	w     *recording.Writer

	mu      sync.Mutex
	pending []recording.PerfReading
}

func newRecordingOpener(inner perf.Opener, root string, w *recording.Writer) (*recordingOpener, error) {
	tree, err := snapshotHost(root)
	if err != nil && len(tree) == 0 {
		return nil, err
	}
	if err := w.Write(recording.Record{Time: time.Now().UTC(), Tree: tree}); err != nil {
		return nil, err
	}
	return &recordingOpener{inner: inner, names: pmuNames(root), w: w}, nil
}

func (o *recordingOpener) OpenGroup(cpu int, attrs []perf.Attr) (perf.Group, error) {
	g, err := o.inner.OpenGroup(cpu, attrs)
	if err != nil {
		return nil, err
	}
	return &recordingGroup{Group: g, o: o, cpu: cpu, attrs: attrs}, nil
}

// flush writes the reads of one scrape as its Sample.
func (o *recordingOpener) flush() error {
	o.mu.Lock()
	events := o.pending
	o.pending = nil
	o.mu.Unlock()
	b, err := json.Marshal(recording.PerfSample{Perf: events})
	if err != nil {
		return err
	}
	return o.w.Write(recording.Record{Time: time.Now().UTC(), Sample: b})
}

type recordingGroup struct {
	perf.Group
	o     *recordingOpener
	cpu   int
	attrs []perf.Attr
}

func (g *recordingGroup) Read(r *perf.Reading) error {
	if err := g.Group.Read(r); err != nil {
		return err
	}
	g.o.mu.Lock()
	defer g.o.mu.Unlock()
	for i, a := range g.attrs {
		g.o.pending = append(g.o.pending, recording.PerfReading{CPU: g.cpu, PMU: g.o.names[a.Type], Config: a.Config, Config1: a.Config1, Config2: a.Config2,
			Value: r.Values[i], Enabled: r.Enabled, Running: r.Running})
	}
	return nil
}

// replayOpener answers group reads from a recording: each event's readings in recorded order.
type replayOpener struct {
	names map[uint32]string
	loop  bool

	mu     sync.Mutex
	queues map[eventKey][]recording.PerfReading
	pos    map[eventKey]int
}

func newReplayOpener(rec *recording.Recording, root string, loop bool) (*replayOpener, error) {
	o := &replayOpener{names: pmuNames(root), loop: loop, queues: map[eventKey][]recording.PerfReading{}, pos: map[eventKey]int{}}
	for _, r := range rec.Samples() {
		var s recording.PerfSample
		if err := json.Unmarshal(r.Sample, &s); err != nil {
			return nil, fmt.Errorf("sample at %s: %w", r.Time, err)
		}
		for _, e := range s.Perf {
			k := eventKey{cpu: e.CPU, pmu: e.PMU, config: e.Config, config1: e.Config1, config2: e.Config2}
			o.queues[k] = append(o.queues[k], e)
		}
	}
	if len(o.queues) == 0 {
		return nil, errors.New("the recording holds no perf readings")
	}
	return o, nil
}

func (o *replayOpener) key(cpu int, a perf.Attr) eventKey {
	return eventKey{cpu: cpu, pmu: o.names[a.Type], config: a.Config, config1: a.Config1, config2: a.Config2}
}

func (o *replayOpener) OpenGroup(cpu int, attrs []perf.Attr) (perf.Group, error) {
	for _, a := range attrs {
		if _, ok := o.queues[o.key(cpu, a)]; !ok {
			// What the kernel answers for an event the PMU does not have.
			return nil, fmt.Errorf("recording has no readings of %s %s on cpu %d: %w", o.names[a.Type], a, cpu, os.ErrNotExist)
		}
	}
	return &replayGroup{o: o, cpu: cpu, attrs: attrs}, nil
}

type replayGroup struct {
	o     *replayOpener
	cpu   int
	attrs []perf.Attr
}

// Read returns each event's next recorded reading. At the end a looping replay starts over;
// otherwise the last reading repeats, as an idle counter would.
func (g *replayGroup) Read(r *perf.Reading) error {
	g.o.mu.Lock()
	defer g.o.mu.Unlock()
	for i, a := range g.attrs {
		k := g.o.key(g.cpu, a)
		q := g.o.queues[k]
		n := g.o.pos[k]
		g.o.pos[k] = n + 1
		idx, lap := n, 0
		switch {
		case n < len(q):
		case g.o.loop:
			idx, lap = n%len(q), n/len(q)
		default:
			idx = len(q) - 1
		}
		r.Values[i] = lapped(q, idx, lap, func(p recording.PerfReading) uint64 { return p.Value })
		r.Enabled = lapped(q, idx, lap, func(p recording.PerfReading) uint64 { return p.Enabled })
		r.Running = lapped(q, idx, lap, func(p recording.PerfReading) uint64 { return p.Running })
	}
	return nil
}

// lapped returns field of reading idx in lap lap of a looping replay. The count of an open perf
// event never goes backwards, and the receiver relies on that (a lower count is taken for a
// multiplexing dip, not a reset): each lap continues from where the previous one ended, one
// recorded interval later, so that the replayed traffic repeats instead of stopping.
func lapped(q []recording.PerfReading, idx, lap int, field func(recording.PerfReading) uint64) uint64 {
	v := field(q[idx])
	if lap == 0 || len(q) < 2 {
		return v
	}
	first, last := field(q[0]), field(q[len(q)-1])
	step := field(q[1]) - first
	return v + uint64(lap)*(last-first+step)
}

func (g *replayGroup) Close() error { return nil }

// replayRoot materializes the recording's tree into a new directory and returns it.
func replayRoot(rec *recording.Recording) (string, error) {
	dir, err := os.MkdirTemp("", "iclens-cpuuncore-replay-")
	if err != nil {
		return "", err
	}
	for _, r := range rec.Records {
		if len(r.Tree) > 0 {
			if err := recording.Materialize(dir, r.Tree); err != nil {
				_ = os.RemoveAll(dir)
				return "", err
			}
		}
	}
	return dir, nil
}

// seams is how the scraper reaches perf and sysfs: live, recording, or replaying.
type seams struct {
	opener perf.Opener
	root   string
	// afterScrape writes the scrape's readings (recording); close releases files and trees.
	afterScrape func() error
	close       func() error
}

// openSeams prepares the perf opener and root for the configured mode.
func openSeams(cfg *Config) (*seams, error) {
	live := &seams{opener: &perf.Syscalls{}, root: cfg.RootPath}
	switch {
	case cfg.Recording.Replay != "":
		rec, err := recording.Open(cfg.Recording.Replay)
		if err != nil {
			return nil, err
		}
		if rec.Header.Receiver != "cpuuncore" {
			return nil, fmt.Errorf("recording %s is of the %q receiver, not cpuuncore", cfg.Recording.Replay, rec.Header.Receiver)
		}
		root, err := replayRoot(rec)
		if err != nil {
			return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
		}
		o, err := newReplayOpener(rec, root, cfg.Recording.Loop)
		if err != nil {
			_ = os.RemoveAll(root)
			return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
		}
		return &seams{opener: o, root: root, close: func() error { return os.RemoveAll(root) }}, nil
	case cfg.Recording.Write != "":
		w, err := recording.Create(cfg.Recording.Write, recording.Header{Receiver: "cpuuncore", Interval: recording.Duration(cfg.CollectionInterval)})
		if err != nil {
			return nil, err
		}
		o, err := newRecordingOpener(live.opener, sysfs.HostRoot(cfg.RootPath), w)
		if err != nil {
			_ = w.Close()
			return nil, err
		}
		return &seams{opener: o, root: cfg.RootPath, afterScrape: o.flush, close: w.Close}, nil
	}
	return live, nil
}
