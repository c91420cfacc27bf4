package burst

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestPacedSaysOnceWhenBehind: passes 30 ms apart at a 10 ms period (a node that cannot hold it)
// are said once, at warn, with the period achieved; holding the period again once, at info.
func TestPacedSaysOnceWhenBehind(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := NewLoop(10*time.Millisecond, zap.New(core))
	at := t0
	for range 300 { // 9 s
		at = at.Add(30 * time.Millisecond)
		l.Paced(at)
	}
	for range 300 { // 3 s
		at = at.Add(10 * time.Millisecond)
		l.Paced(at)
	}
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warns, 1)
	assert.Equal(t, 30*time.Millisecond, warns[0].ContextMap()["achieved"])
	assert.Equal(t, 10*time.Millisecond, warns[0].ContextMap()["period"])
	infos := logs.FilterLevelExact(zapcore.InfoLevel).All()
	require.Len(t, infos, 1)
	assert.Equal(t, 10*time.Millisecond, infos[0].ContextMap()["achieved"])
}

// TestPacedQuietWhenHeld: a loop that holds its period (jitter of a few ms included) says nothing.
func TestPacedQuietWhenHeld(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := NewLoop(10*time.Millisecond, zap.New(core))
	at := t0
	for i := range 1000 {
		at = at.Add(time.Duration(8+4*(i%2)) * time.Millisecond)
		l.Paced(at)
	}
	assert.Zero(t, logs.Len())
}

// TestNextTickDropsMissedTicks: the next tick after a pass is one period on, on the grid of the
// first; a pass that ran past one or more ticks resumes at the first tick after it ended, never
// catching up on those it missed (time.Ticker's rule).
func TestNextTickDropsMissedTicks(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, c := range []struct{ next, now, want int64 }{
		{100 * ms, 103 * ms, 110 * ms}, // on time
		{100 * ms, 110 * ms, 120 * ms}, // ended at the next tick: that one is missed
		{100 * ms, 135 * ms, 140 * ms}, // 35 ms late: three ticks dropped, none queued
		{100 * ms, 99 * ms, 110 * ms},  // woke a little early
	} {
		assert.Equal(t, c.want, nextTick(c.next, c.now, 10*ms), "next %d ms, now %d ms", c.next/ms, c.now/ms)
	}
}

// TestLoopParksWhileIdle: a loop with nothing to read takes no tick until Wake, then passes; Stop
// ends it. It counts ticks and passes, it does not time them.
func TestLoopParksWhileIdle(t *testing.T) {
	ticks := make(chan time.Time, 1)
	passes := make(chan struct{}, 10)
	idle := make(chan bool, 1)
	idle <- true
	l := NewLoop(10*time.Millisecond, zap.NewNop())
	l.NewTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	parked := make(chan struct{}, 10)
	exited := make(chan struct{})
	l.Start(Work{
		Pass:   func() { passes <- struct{}{} },
		Idle:   func() bool { v := <-idle; idle <- v; return v },
		Parked: func() { parked <- struct{}{} },
		Exit:   func() { close(exited) },
	})
	<-parked
	ticks <- t0
	// The goroutine is parked on Wake: the tick stays in the channel.
	select {
	case <-passes:
		t.Fatal("an idle loop passed")
	case <-parked:
		t.Fatal("an idle loop parked twice without a Wake")
	default:
	}
	<-idle
	idle <- false
	l.Wake()
	select {
	case <-passes:
	case <-time.After(time.Minute):
		t.Fatal("no pass within a minute of Wake")
	}
	assert.Empty(t, ticks, "the held tick gave the pass")
	l.Stop()
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("Exit did not run within a minute of Stop")
	}
}
