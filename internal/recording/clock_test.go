package recording

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// c0 is the collection clock's origin in these tests.
var c0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// scrapes replays samples recorded every second at the given scrape times (seconds after t0 on
// the collection clock) and returns the stamps.
func scrapes(c *ReplayClock, recorded []float64, at []float64) []time.Time {
	out := make([]time.Time, len(at))
	for i := range at {
		rec := c0.Add(-time.Hour).Add(time.Duration(recorded[i] * float64(time.Second)))
		out[i] = c.Stamp(rec, c0.Add(time.Duration(at[i]*float64(time.Second))))
	}
	return out
}

func seconds(ts []time.Time) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(c0).Seconds()
	}
	return out
}

// TestReplayClockKeepsRecordedSpacing: scrapes that run up to 900 ms late (a loaded machine,
// the ticker's phase kept) get the recorded times, one second apart, so that every rate is the
// recorded one; with the scrape's own time, the rate of the interval after a late scrape would be
// 1/1.9 of it and the next one 10 times it.
func TestReplayClockKeepsRecordedSpacing(t *testing.T) {
	c := NewReplayClock(time.Second)
	got := seconds(scrapes(c, []float64{0, 1, 2, 3, 4, 5}, []float64{0, 1.9, 2.0, 3.3, 4.0, 5.05}))
	assert.Equal(t, []float64{0, 1, 2, 3, 4, 5}, got)
	assert.Zero(t, c.Reanchors())
}

// TestReplayClockAnchorsAgainBehind: a scrape skipped altogether (a stall longer than two
// intervals) moves the stamps onto the collection clock again instead of leaving every later
// point stale.
func TestReplayClockAnchorsAgainBehind(t *testing.T) {
	c := NewReplayClock(time.Second)
	got := seconds(scrapes(c, []float64{0, 1, 2, 3}, []float64{0, 1, 4.5, 5.5}))
	assert.Equal(t, []float64{0, 1, 4.5, 5.5}, got)
	assert.Equal(t, 1, c.Reanchors())
}

// TestReplayClockAnchorsAgainAhead: a recording made every 10 s replayed every second would
// otherwise stamp points ever further in the future; each is held at the scrape's time.
func TestReplayClockAnchorsAgainAhead(t *testing.T) {
	c := NewReplayClock(time.Second)
	got := seconds(scrapes(c, []float64{0, 10, 20}, []float64{0, 1, 2}))
	assert.Equal(t, []float64{0, 1, 2}, got)
	assert.Equal(t, 2, c.Reanchors())
}

// TestReplayClockAlwaysIncreases: a recording whose times repeat or go back (two samples at one
// time, a clock stepped back while recording), the end of a replay that repeats its last sample,
// and scrapes that follow each other at once: every stamp is later than the one before.
func TestReplayClockAlwaysIncreases(t *testing.T) {
	c := NewReplayClock(time.Second)
	stamps := scrapes(c,
		[]float64{0, 1, 1, 0.5, 2.4, 2.4, 2.4, 3.4},
		[]float64{0, 1, 2, 3, 2.0000001 + 1, 3.0000002 + 1, 5, 5.0000001})
	for i := 1; i < len(stamps); i++ {
		require.True(t, stamps[i].After(stamps[i-1]), "stamp %d %v after %v", i, stamps[i], stamps[i-1])
	}
}

// TestReplayClockAcrossLaps: with Player.Time continuing a looping replay's clock, the stamps
// keep the recorded spacing from one lap to the next.
func TestReplayClockAcrossLaps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	writeRecording(t, path) // three samples, one second apart
	rec, err := Open(path)
	require.NoError(t, err)
	p, err := NewPlayer(rec, "", true)
	require.NoError(t, err)
	defer p.Close()
	c := NewReplayClock(time.Second)
	var got []float64
	for i := range 7 {
		now := c0.Add(time.Duration(i)*time.Second + 200*time.Millisecond*time.Duration(i%2))
		r, ok, err := p.Next(now)
		require.NoError(t, err)
		require.True(t, ok)
		got = append(got, c.Stamp(p.Time(r.Time), now).Sub(c0).Seconds())
	}
	assert.Equal(t, []float64{0, 1, 2, 3, 4, 5, 6}, got)
	assert.Zero(t, c.Reanchors())
}

// TestReplayClockWithoutSample: before any sample is played (zero recorded time) the stamps are
// the scrapes' own times.
func TestReplayClockWithoutSample(t *testing.T) {
	c := NewReplayClock(time.Second)
	for i := range 3 {
		now := c0.Add(time.Duration(i) * 1300 * time.Millisecond)
		assert.Equal(t, now, c.Stamp(time.Time{}, now))
	}
}
