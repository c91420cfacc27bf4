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

// The fast sampler (bursts.period, README.md "Microbursts") reads only the byte counters, on a
// goroutine of its own with its own sysfs.Reader, and hands each reading to the counter's
// burst.Fold. The scrape takes what the folds hold under a mutex the sampler holds only to add a
// pass's readings, never while it reads: a sampler whose reads are slow or stuck delays no scrape.
// Its ticks drop the ones a slow pass misses instead of queueing them, as time.Ticker does: a
// period the node cannot hold stretches the windows (logged once, with the period achieved) and
// never builds a backlog. On Linux the goroutine sleeps on its own OS thread until each tick
// (sleepTicks, burstticks_linux.go), which costs less than a Go timer waking the scheduler a
// hundred times a second.

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
	logger *zap.Logger
	clock  func() time.Time
	// newTicker, when set, makes the sampler's ticker as a channel (tests drive one of their own);
	// unset, the platform's sleepTicks.
	newTicker func(time.Duration) (<-chan time.Time, func())
	// onPass, when recording, receives each pass's readings by relative path.
	onPass func(at time.Time, values map[string]uint64)

	mu      sync.Mutex
	targets []*burstTarget
	gen     int // bumped by setTargets: the goroutine closes its kept files
	pace    pacer
	// wake tells an idle goroutine (no targets) that setTargets gave it some.
	wake chan struct{}

	reader *sysfs.Reader
	stop   chan struct{}
	done   chan struct{}
	// raws and oks are a pass's readings, kept between passes (the goroutine's alone).
	raws []uint64
	oks  []bool
}

func newBurstSampler(cfg BurstsConfig, logger *zap.Logger, clock func() time.Time) *burstSampler {
	return &burstSampler{
		period: cfg.Period, shares: cfg.Shares, logger: logger, clock: clock,
		pace: pacer{period: cfg.Period},
		wake: make(chan struct{}, 1),
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
	select {
	case b.wake <- struct{}{}:
	default:
	}
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
	b.stop, b.done = make(chan struct{}), make(chan struct{})
	go b.run(b.stop, b.done)
}

// shutdown stops the goroutine. It does not wait for a read that is stuck in the kernel: such a
// goroutine ends when its read returns.
func (b *burstSampler) shutdown() {
	if b.stop == nil {
		return
	}
	close(b.stop)
	done := b.done
	b.stop, b.done = nil, nil
	select {
	case <-done:
	case <-time.After(b.period + 100*time.Millisecond):
	}
}

func (b *burstSampler) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer b.reader.CloseKept()
	var ticks tickSource
	if b.newTicker != nil {
		c, stopTicker := b.newTicker(b.period)
		defer stopTicker()
		ticks = chanTicks{c: c, stop: stop}
	} else {
		ticks = newSleepTicks(b.period, stop)
	}
	gen := -1
	var targets []*burstTarget
	for {
		if b.idle() {
			// A node without RDMA ports: no wakeup at all until a discovery finds some. The
			// files of ports that went away are not held meanwhile.
			b.reader.CloseKept()
			select {
			case <-stop:
				return
			case <-b.wake:
				continue
			}
		}
		if !ticks.wait() {
			return
		}
		b.mu.Lock()
		changed := b.gen != gen
		targets, gen = b.targets, b.gen
		b.mu.Unlock()
		if changed {
			// The kept descriptors belong to the old targets: a path may now lead elsewhere.
			b.reader.CloseKept()
		}
		b.pass(targets)
	}
}

// tickSource gives the sampler's ticks: wait blocks until the next one and returns false once the
// sampler is stopped.
type tickSource interface{ wait() bool }

// chanTicks are ticks from a channel (a time.Ticker's, or a test's).
type chanTicks struct {
	c    <-chan time.Time
	stop <-chan struct{}
}

func (t chanTicks) wait() bool {
	select {
	case <-t.stop:
		return false
	case <-t.c:
		return true
	}
}

// nextTick is the tick after one due at next (ns on a monotonic clock), given that the pass for it
// ended at now: next plus one period, or, where the pass ran past that, the first tick after now.
// The ticks missed are dropped, as time.Ticker drops them, never caught up on.
func nextTick(next, now, period int64) int64 {
	next += period
	if now >= next {
		next += ((now-next)/period + 1) * period
	}
	return next
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
	achieved, change := b.pace.tick(at)
	b.mu.Unlock()
	b.sayPace(achieved, change)
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

// sayPace logs when the sampler starts and stops falling behind its period: once each time.
func (b *burstSampler) sayPace(achieved time.Duration, change int) {
	switch change {
	case paceBehind:
		b.logger.Warn("The fast sampler cannot hold bursts.period on this node: ticks are dropped, not queued, "+
			"and each window is as long as the period achieved; raise bursts.period",
			zap.Duration("period", b.period), zap.Duration("achieved", achieved))
	case paceHeld:
		b.logger.Info("The fast sampler holds bursts.period again", zap.Duration("period", b.period), zap.Duration("achieved", achieved))
	}
}

// pacer measures the period the sampler achieves, over spans of at least paceSpan and paceTicks
// passes, and says when it falls behind (the passes come more than half a period late on average)
// and when it holds again (within a tenth).
type pacer struct {
	period time.Duration
	first  time.Time
	last   time.Time
	n      int
	behind bool
}

const (
	paceSpan  = time.Second
	paceTicks = 20
)

// What pacer.tick says.
const (
	paceNone = iota
	paceBehind
	paceHeld
)

// tick records a pass at at and returns the period achieved over the span that ended with it (0
// while a span is under way) and whether the sampler fell behind or holds again.
func (p *pacer) tick(at time.Time) (time.Duration, int) {
	if p.first.IsZero() || !at.After(p.last) {
		p.first, p.last, p.n = at, at, 0
		return 0, paceNone
	}
	p.last = at
	p.n++
	span := at.Sub(p.first)
	if span < paceSpan || p.n < paceTicks {
		return 0, paceNone
	}
	achieved := span / time.Duration(p.n)
	p.first, p.n = at, 0
	switch {
	case !p.behind && achieved > p.period*3/2:
		p.behind = true
		return achieved, paceBehind
	case p.behind && achieved <= p.period*11/10:
		p.behind = false
		return achieved, paceHeld
	}
	return achieved, paceNone
}
