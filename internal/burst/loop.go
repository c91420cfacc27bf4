package burst // import "github.com/otelcol-iclens/otelcol-iclens/internal/burst"

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Loop runs a receiver's fast sampler: a pass of reads every period, on a goroutine of its own,
// so that no pass ever waits for a scrape and no scrape for a pass. Its ticks drop the ones a slow
// pass misses instead of queueing them, as time.Ticker does: a period the node cannot hold
// stretches the windows (Paced logs it once, with the period achieved) and never builds a backlog.
// On Linux the goroutine sleeps on its own OS thread until each tick (sleepTicks, ticks_linux.go),
// which costs less than a Go timer waking the scheduler a hundred times a second. What a pass reads
// and where it folds it is the receiver's (Work).
type Loop struct {
	period time.Duration
	logger *zap.Logger
	// NewTicker, when set before Start, makes the ticks a channel's (tests drive one of their
	// own); unset, the platform's sleepTicks.
	NewTicker func(time.Duration) (<-chan time.Time, func())

	paceMu sync.Mutex
	pace   pacer

	// wake tells a parked goroutine (Work.Idle) that there is something to read again.
	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// Work is what a Loop does.
type Work struct {
	// Pass reads once; it runs at each tick, and calls Loop.Paced with the time it started.
	Pass func()
	// Idle reports that there is nothing to read (a node without the hardware): the goroutine
	// then takes no tick at all until Wake.
	Idle func() bool
	// Parked, when set, runs each time the goroutine parks, to let go of what it holds (the files
	// of devices that went away).
	Parked func()
	// Exit, when set, runs when the goroutine ends.
	Exit func()
}

// NewLoop returns a stopped loop of the given period; logger says when it falls behind.
func NewLoop(period time.Duration, logger *zap.Logger) *Loop {
	return &Loop{period: period, logger: logger, pace: pacer{period: period}, wake: make(chan struct{}, 1)}
}

// Period is the configured period.
func (l *Loop) Period() time.Duration { return l.period }

// Start runs w on a goroutine of its own until Stop.
func (l *Loop) Start(w Work) {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go l.run(w, l.stop, l.done)
}

// Wake tells a parked goroutine to look at Work.Idle again.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Stop ends the goroutine. It does not wait for a read that is stuck in the kernel beyond one
// period: such a goroutine ends when its read returns.
func (l *Loop) Stop() {
	if l.stop == nil {
		return
	}
	close(l.stop)
	done := l.done
	l.stop, l.done = nil, nil
	select {
	case <-done:
	case <-time.After(l.period + 100*time.Millisecond):
	}
}

func (l *Loop) run(w Work, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if w.Exit != nil {
		defer w.Exit()
	}
	var ticks tickSource
	if l.NewTicker != nil {
		c, stopTicker := l.NewTicker(l.period)
		defer stopTicker()
		ticks = chanTicks{c: c, stop: stop}
	} else {
		ticks = newSleepTicks(l.period, stop)
	}
	for {
		if w.Idle != nil && w.Idle() {
			if w.Parked != nil {
				w.Parked()
			}
			select {
			case <-stop:
				return
			case <-l.wake:
				continue
			}
		}
		if !ticks.wait() {
			return
		}
		w.Pass()
	}
}

// Paced records a pass that started at at, and says when the loop starts and stops falling behind
// its period: once each time.
func (l *Loop) Paced(at time.Time) {
	l.paceMu.Lock()
	achieved, change := l.pace.tick(at)
	l.paceMu.Unlock()
	switch change {
	case paceBehind:
		l.logger.Warn("The fast sampler cannot hold bursts.period on this node: ticks are dropped, not queued, "+
			"and each window is as long as the period achieved; raise bursts.period",
			zap.Duration("period", l.period), zap.Duration("achieved", achieved))
	case paceHeld:
		l.logger.Info("The fast sampler holds bursts.period again", zap.Duration("period", l.period), zap.Duration("achieved", achieved))
	}
}

// pacer measures the period a loop achieves, over spans of at least paceSpan and paceTicks
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
// while a span is under way) and whether the loop fell behind or holds again.
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

// tickSource gives the loop's ticks: wait blocks until the next one and returns false once the
// loop is stopped.
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
