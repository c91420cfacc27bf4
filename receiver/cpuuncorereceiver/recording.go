package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"cmp"
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
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
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
		if parts[5] == "regs" {
			// arm64: regs/identification/midr_el1 names the CPU where cpuinfo cannot (readMIDR).
			return len(parts) > 6 && (parts[6] != "identification" || len(parts) > 7 && parts[7] != "midr_el1")
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
	case len(parts) >= 5 && parts[0] == "sys" && parts[1] == "devices" && parts[2] == "platform":
		// An arm_cspmu PMU below its APMT platform device (sys/devices/platform/arm-cs-arch-pmu.N/
		// <pmu>): identifier, cpumask, associated_cpus, format/, events/; not its power/ or
		// subsystem/ links.
		return len(parts) >= 6 && (parts[5] == "power" || parts[5] == "subsystem" || parts[5] == "uevent")
	case len(parts) >= 3 && parts[0] == "sys" && parts[1] == "devices":
		// A PMU's directory: type, cpumask, format/, events/, dieN mappings; not its power/ or
		// subsystem/ links.
		return len(parts) >= 4 && (parts[3] == "power" || parts[3] == "subsystem" || parts[3] == "uevent")
	}
	return false
}

// seam is where the scraper's counters and files come from, chosen once per Start: the live
// kernel, the live kernel with every reading recorded, or a replay.
type seam struct {
	opener perf.Opener
	// root is where discovery reads sys/ and proc/: root_path, or the replay's materialized tree.
	root string
	// replayed: root is a tree from a recording made elsewhere, read confined to it.
	replayed bool
	// afterScrape writes the scrape's readings (recording) or moves to the next recorded sample
	// (replay); nil live.
	afterScrape func(now time.Time) error
	// stamp is the time a scrape at now gives its points: now live, the time the sample was
	// recorded at in a replay (recording.ReplayClock); nil live.
	stamp func(now time.Time) time.Time
	// addPass keeps a pass of the fast sampler for the next sample (recording); takeBursts
	// returns the current sample's sub-interval samples once, and how recorded times map to the
	// replay's clock (replay). nil otherwise.
	addPass    func(at time.Time, values map[string]uint64)
	takeBursts func() (*recording.SubSamples, func(time.Time) time.Time)
	close      func() error
	// ring keeps the last bursts.capture_window of what a recording would hold, live or
	// replayed (capture.go); nil without bursts.capture.
	ring *recording.Ring
}

// openSeam prepares the perf opener and root for the configured mode. The recording's Writer
// is created here, once per Start, and serves every group the scraper opens however often it
// rediscovers; a replay that cannot be read, or a recording that cannot be created, fails Start.
// With bursts.capture the capture ring is one more place the readings go (a live node's, or a
// replay's on the replay's clock).
func openSeam(cfg *Config, live func() (perf.Opener, error), now time.Time) (*seam, error) {
	ring := newCaptureRing(cfg)
	if cfg.Recording.Replay != "" {
		p, err := recording.OpenReplay(cfg.Recording.Replay, metadata.Type.String(), cfg.Recording.Loop)
		if err != nil {
			return nil, err
		}
		o := newReplayOpener(p, cfg.CollectionInterval)
		if ring != nil {
			if err := o.keepIn(ring); err != nil {
				_ = p.Close()
				return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
			}
		}
		// The first sample answers discovery's opens and the first scrape.
		if err := o.advance(now); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("recording %s: %w", cfg.Recording.Replay, err)
		}
		if len(o.cur) == 0 {
			_ = p.Close()
			return nil, fmt.Errorf("recording %s: the first sample holds no perf readings", cfg.Recording.Replay)
		}
		return &seam{opener: o, root: p.Root(), replayed: true, afterScrape: o.advance, stamp: o.stamp, takeBursts: o.takeBursts, close: p.Close, ring: ring}, nil
	}
	opener, err := live()
	if err != nil {
		return nil, err
	}
	if cfg.Recording.Write == "" && ring == nil {
		return &seam{opener: opener, root: cfg.RootPath, close: func() error { return nil }}, nil
	}
	var sinks []recordSink
	closeFile := func() error { return nil }
	if cfg.Recording.Write != "" {
		w, err := recording.CreateFor(cfg.Recording.Write, metadata.Type.String(), cfg.CollectionInterval)
		if err != nil {
			return nil, err
		}
		sinks, closeFile = append(sinks, w), w.Close
	}
	if ring != nil {
		sinks = append(sinks, ring)
	}
	o, err := newRecordingOpener(opener, sysfs.HostRoot(cfg.RootPath), sinks, now)
	if err != nil {
		_ = closeFile()
		return nil, fmt.Errorf("recording %s: %w", cmp.Or(cfg.Recording.Write, "for bursts.capture"), err)
	}
	o.burstPeriod = cfg.Bursts.Period
	return &seam{opener: o, root: cfg.RootPath, afterScrape: o.flush, addPass: o.addPass, close: closeFile, ring: ring}, nil
}

// recordSink is where a recordingOpener writes: the recording's file (recording.Writer), the
// capture ring (recording.Ring), or both.
type recordSink interface {
	Write(recording.Record) error
}

// writeAll writes rec to every sink.
func writeAll(sinks []recordSink, rec recording.Record) error {
	var errs []error
	for _, w := range sinks {
		errs = append(errs, w.Write(rec))
	}
	return errors.Join(errs...)
}

// recordingOpener passes groups through to the real opener and collects their reads.
type recordingOpener struct {
	inner perf.Opener
	names map[uint32]string
	sinks []recordSink

	mu      sync.Mutex
	pending []recording.PerfReading
	// subs are the fast sampler's passes since the last flush, taken every burstPeriod.
	subs        *recording.SubSamples
	burstPeriod time.Duration
}

// newRecordingOpener writes the host's tree as the recording's first record.
func newRecordingOpener(inner perf.Opener, root string, sinks []recordSink, now time.Time) (*recordingOpener, error) {
	tree, err := snapshotHost(root)
	if err != nil && len(tree) == 0 {
		return nil, err
	}
	if err := writeAll(sinks, recording.Record{Time: now.UTC(), Tree: tree}); err != nil {
		return nil, err
	}
	return &recordingOpener{inner: inner, names: pmuNames(root), sinks: sinks}, nil
}

func (o *recordingOpener) OpenGroup(cpu int, attrs []perf.Attr) (perf.Group, error) {
	g, err := o.inner.OpenGroup(cpu, attrs)
	if err != nil {
		return nil, err
	}
	return &recordingGroup{Group: g, o: o, cpu: cpu, attrs: attrs}, nil
}

// flush writes the reads of one scrape as its Sample.
func (o *recordingOpener) flush(now time.Time) error {
	o.mu.Lock()
	events, subs := o.pending, o.subs
	o.pending, o.subs = nil, nil
	o.mu.Unlock()
	b, err := json.Marshal(recording.PerfSample{Perf: events, Bursts: subs})
	if err != nil {
		return err
	}
	return writeAll(o.sinks, recording.Record{Time: now.UTC(), Sample: b})
}

// addPass keeps one pass of the fast sampler (burstSampler.onPass) for the next scrape's sample.
func (o *recordingOpener) addPass(at time.Time, values map[string]uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.subs == nil {
		o.subs = &recording.SubSamples{Period: recording.Duration(o.burstPeriod)}
	}
	o.subs.Add(at.UTC(), values)
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

// replayOpener answers group reads from a replay, one recorded sample per scrape: every read of an
// event until the next scrape returns what that event read in the recorded scrape, so that the
// background reader of fold.go reads the same values as the scrape. At the end of the recording a
// looping replay starts over (continuing the counts, see lapCarry); otherwise the last sample
// repeats, as idle counters would.
type replayOpener struct {
	player *recording.Player
	names  map[uint32]string

	mu    sync.Mutex
	cur   map[eventKey]recording.PerfReading
	carry map[eventKey]*lapCarry

	// clock stamps the scrape that reads cur with the time cur was recorded at (recorded, as
	// the player maps it), so that a rate over a replay is the recorded one however late the
	// scrapes run.
	clock    *recording.ReplayClock
	recorded time.Time
	// subs are the current sample's sub-interval samples, until the scrape takes them.
	subs *recording.SubSamples
	// ring keeps each sample replayed (bursts.capture, capture.go); nil otherwise.
	ring *recording.Ring
}

func newReplayOpener(p *recording.Player, interval time.Duration) *replayOpener {
	return &replayOpener{player: p, names: pmuNames(p.Root()), carry: map[eventKey]*lapCarry{}, clock: recording.NewReplayClock(interval)}
}

// stamp returns the time for the points of a scrape at now that reads the current sample.
func (o *replayOpener) stamp(now time.Time) time.Time {
	return o.clock.Stamp(o.recorded, now)
}

// advance moves to the next recorded sample.
func (o *replayOpener) advance(now time.Time) error {
	r, ok, err := o.player.Next(now)
	if err != nil || !ok {
		return err
	}
	var s recording.PerfSample
	if err := json.Unmarshal(r.Sample, &s); err != nil {
		return fmt.Errorf("sample at %s: %w", r.Time, err)
	}
	o.recorded = o.player.Time(r.Time)
	laps := o.player.Laps()
	cur := make(map[eventKey]recording.PerfReading, len(s.Perf))
	for _, e := range s.Perf {
		k := eventKey{cpu: e.CPU, pmu: e.PMU, config: e.Config, config1: e.Config1, config2: e.Config2}
		c := o.carry[k]
		if c == nil {
			c = &lapCarry{}
			o.carry[k] = c
		}
		if laps == 0 {
			c.observe(e)
		}
		cur[k] = c.shift(e, laps)
	}
	o.mu.Lock()
	o.cur, o.subs = cur, s.Bursts
	o.mu.Unlock()
	if o.ring != nil {
		return o.keepSample(cur, s.Bursts)
	}
	return nil
}

// takeBursts returns the current sample's sub-interval samples, once.
func (o *replayOpener) takeBursts() (*recording.SubSamples, func(time.Time) time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	subs := o.subs
	o.subs = nil
	return subs, o.player.Time
}

// lapCarry continues an event's counts from lap to lap of a looping replay. The count of an open
// perf event never goes backwards, and the receiver relies on that (a lower count is taken for a
// multiplexing dip, not a reset): each lap continues from where the previous one ended, one
// recorded interval later, so that the replayed traffic repeats instead of stopping.
type lapCarry struct {
	first, second, last recording.PerfReading
	seen                int
}

// observe notes a reading of the first lap.
func (c *lapCarry) observe(p recording.PerfReading) {
	switch c.seen {
	case 0:
		c.first = p
	case 1:
		c.second = p
	}
	c.last = p
	c.seen++
}

// shift returns reading p of lap laps: each lap adds the first lap's increase plus one step.
func (c *lapCarry) shift(p recording.PerfReading, laps int) recording.PerfReading {
	if laps == 0 || c.seen < 2 {
		return p
	}
	lap := func(first, second, last, v uint64) uint64 { return v + uint64(laps)*(last-first+second-first) }
	p.Value = lap(c.first.Value, c.second.Value, c.last.Value, p.Value)
	p.Enabled = lap(c.first.Enabled, c.second.Enabled, c.last.Enabled, p.Enabled)
	p.Running = lap(c.first.Running, c.second.Running, c.last.Running, p.Running)
	return p
}

func (o *replayOpener) key(cpu int, a perf.Attr) eventKey {
	return eventKey{cpu: cpu, pmu: o.names[a.Type], config: a.Config, config1: a.Config1, config2: a.Config2}
}

func (o *replayOpener) OpenGroup(cpu int, attrs []perf.Attr) (perf.Group, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, a := range attrs {
		if _, ok := o.cur[o.key(cpu, a)]; !ok {
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

// Read returns each event's reading in the current sample.
func (g *replayGroup) Read(r *perf.Reading) error {
	g.o.mu.Lock()
	defer g.o.mu.Unlock()
	for i, a := range g.attrs {
		p := g.o.cur[g.o.key(g.cpu, a)]
		r.Values[i] = p.Value
		r.Enabled, r.Running = p.Enabled, p.Running
	}
	return nil
}

func (g *replayGroup) Close() error { return nil }
