package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

// The fast sampler (bursts.period, README.md "Microbursts") reads only the byte counters, on the
// goroutine of a burst.Loop with its own sysfs.Reader, and hands each reading to the counter's
// burst.Fold. The scrape takes what the folds hold under a mutex the sampler holds only to add a
// pass's readings, never while it reads: a sampler whose reads are slow or stuck delays no scrape.
// The loop drops the ticks a slow pass misses and says so once (burst.Loop).

// burstTarget is one byte counter the sampler reads: a port's data counter (and the files summed
// into it) or a netdev's statistic, with its fold.
type burstTarget struct {
	key   string   // the series key of the counter (counterFile.key, the netdev file)
	paths []string // absolute files, summed
	rels  []string // the same relative to the host root: how a recording names them
	scale uint64   // to bytes (4 for the PMA data counters)

	component metadata.AttributeComponent
	direction metadata.AttributeDirection
	device    string
	// port gives the line rate (its rate file, read by the scrape).
	port *port

	fold *burst.Fold
}

// burstSampler owns the folds and, on a live node, the goroutine that feeds them.
type burstSampler struct {
	period time.Duration
	shares []float64
	clock  func() time.Time
	// loop runs the passes on a live node (its NewTicker: tests drive ticks of their own).
	loop *burst.Loop
	// onPass, when recording, receives each pass's readings by relative path.
	onPass func(at time.Time, values map[string]uint64)

	mu      sync.Mutex
	targets []*burstTarget
	gen     int // bumped by setTargets: the goroutine closes its kept files

	reader *sysfs.Reader
	// seen is the generation of the targets the goroutine read last; raws and oks are a pass's
	// readings, kept between passes (the goroutine's alone).
	seen int
	raws []uint64
	oks  []bool
}

func newBurstSampler(cfg BurstsConfig, logger *zap.Logger, clock func() time.Time) *burstSampler {
	return &burstSampler{
		period: cfg.Period, shares: cfg.Shares, clock: clock,
		loop: burst.NewLoop(cfg.Period, logger), seen: -1,
	}
}

// window is the burst.window attribute: the configured period.
func (b *burstSampler) window() string { return b.period.String() }

// setTargets replaces the counters read, keeping the fold of every counter that stays (by key), so
// that a rediscovery does not restart the cumulative series.
func (b *burstSampler) setTargets(next []*burstTarget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := make(map[string]*burstTarget, len(b.targets))
	for _, t := range b.targets {
		old[t.key] = t
	}
	for _, t := range next {
		if o := old[t.key]; o != nil {
			t.fold = o.fold
		} else {
			t.fold = burst.New(0, b.shares)
		}
	}
	b.targets = next
	b.gen++
	b.loop.Wake()
}

// idle reports whether there is nothing to read.
func (b *burstSampler) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.targets) == 0
}

// start runs the sampler on the live node, reading under root (confined to it unless it is /).
func (b *burstSampler) start(root string) {
	b.reader = &sysfs.Reader{}
	if root != string(filepath.Separator) {
		// A root that is not there yet leaves the reads unconfined, as the scrape's own reader
		// does until the mount comes (rnicScraper.confine).
		_ = b.reader.Confine(root)
	}
	b.reader.SetMaxKept(maxKeptFiles() / 2)
	b.seen = -1
	b.loop.Start(burst.Work{
		Pass: b.tick,
		Idle: b.idle,
		// A node without RDMA ports: no wakeup at all until a discovery finds some. The files
		// of ports that went away are not held meanwhile.
		Parked: b.reader.CloseKept,
		Exit:   b.reader.CloseKept,
	})
}

// shutdown stops the goroutine (burst.Loop.Stop: a read stuck in the kernel is not waited for).
func (b *burstSampler) shutdown() { b.loop.Stop() }

// tick is one pass of the goroutine on the targets setTargets gave last.
func (b *burstSampler) tick() {
	b.mu.Lock()
	changed := b.gen != b.seen
	targets := b.targets
	b.seen = b.gen
	b.mu.Unlock()
	if changed {
		// The kept descriptors belong to the old targets: a path may now lead elsewhere.
		b.reader.CloseKept()
	}
	b.pass(targets)
}

// pass reads every target once and folds the readings, all stamped with the pass's start: the
// reads of a pass follow each other in the same order every pass, so each counter's windows
// are the same length as the passes' distance.
func (b *burstSampler) pass(targets []*burstTarget) {
	at := b.clock()
	if cap(b.raws) < len(targets) {
		b.raws, b.oks = make([]uint64, len(targets)), make([]bool, len(targets))
	}
	raws, oks := b.raws[:len(targets)], b.oks[:len(targets)]
	var rec map[string]uint64
	if b.onPass != nil {
		rec = make(map[string]uint64, len(targets))
	}
	for i, t := range targets {
		raws[i], oks[i] = b.read(t, rec)
	}
	b.mu.Lock()
	for i, t := range targets {
		if oks[i] {
			t.fold.Add(burst.Sample{T: at, Bytes: raws[i] * t.scale})
		}
	}
	b.mu.Unlock()
	b.loop.Paced(at)
	if rec != nil && len(rec) > 0 {
		b.onPass(at, rec)
	}
}

// read reads one target's files: a failed read costs that sample (the scrape reports the file's
// failures; the sampler does not say them again).
func (b *burstSampler) read(t *burstTarget, rec map[string]uint64) (uint64, bool) {
	var sum uint64
	ok := true
	for i, p := range t.paths {
		v, err := b.reader.ReadUintKept(p)
		if err != nil {
			ok = false
			continue
		}
		if rec != nil {
			rec[t.rels[i]] = v
		}
		sum += v
	}
	return sum, ok
}

// replay folds a recording's sub-interval samples, with their recorded times moved to the
// replay's clock by at. Nothing is read: the fold runs on exactly what was recorded.
func (b *burstSampler) replay(subs *recording.SubSamples, at func(time.Time) time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range subs.Len() {
		ts := at(subs.Time(i))
		for _, t := range b.targets {
			sum, ok := uint64(0), true
			for _, rel := range t.rels {
				v, vok := subs.Value(i, rel)
				sum, ok = sum+v, ok && vok
			}
			if ok {
				t.fold.Add(burst.Sample{T: ts, Bytes: sum * t.scale})
			}
		}
	}
}
