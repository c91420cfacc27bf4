package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import "time"

// ReplayClock stamps replayed samples with the time they were recorded at, moved onto the
// replay's clock, instead of the time the replaying scrape happened to run. A rate over a replay
// is then the recorded rate exactly, however late the scrapes run: on a busy machine a scrape
// that runs 300 ms late would otherwise turn one interval's bytes into a rate 30 % off, and the
// next one as far the other way.
//
// The stamps stay near the collection clock: the first sample is stamped with the scrape's own
// time, and the clock anchors again at the scrape's time when the stamps drift more than
// MaxLag behind it (scrapes skipped under load, a recording made at a shorter interval than the
// replay's) or MaxLead ahead of it (a recording made at a longer interval), so that a replayed
// point is never stale or from the future to whoever receives it. Stamps always increase,
// whatever the recording holds, so that a cumulative series stays valid.
type ReplayClock struct {
	// MaxLag and MaxLead bound how far a stamp may fall behind or run ahead of the scrape's time.
	MaxLag, MaxLead time.Duration

	offset    time.Duration // stamp = recorded (on the player's lap-continuous clock) + offset
	started   bool
	prev      time.Time // the previous stamp
	prevNow   time.Time // the scrape time the previous stamp was given at
	reanchors int
}

// NewReplayClock returns a clock for a replay scraped every interval: stamps may fall two
// intervals behind the scrapes (one late scrape, and the one after it that runs at once) and run
// half an interval ahead.
func NewReplayClock(interval time.Duration) *ReplayClock {
	return &ReplayClock{MaxLag: 2 * interval, MaxLead: interval / 2}
}

// Stamp returns the time to give the sample recorded at recorded (as Player.Time maps it, so
// that looping laps continue) when it is scraped at now. A sample stamped again (the end of a
// replay that does not loop, where the last values repeat) gets the scrape's time, and so does
// one with no recorded time (zero: no sample has been played).
func (c *ReplayClock) Stamp(recorded, now time.Time) time.Time {
	if recorded.IsZero() {
		recorded = now.Add(-c.offset)
	}
	if !c.started {
		c.started = true
		c.offset = now.Sub(recorded)
		c.prev, c.prevNow = now, now
		return now
	}
	t := recorded.Add(c.offset)
	if t.Before(now.Add(-c.MaxLag)) || t.After(now.Add(c.MaxLead)) || !t.After(c.prev) {
		t = now
		if !t.After(c.prev) {
			// Two scrapes in quick succession after a stalled one, with the previous stamp ahead
			// of its scrape: move on by the time that passed, so that the stamps still increase.
			t = c.prev.Add(max(now.Sub(c.prevNow), time.Microsecond))
		}
		c.offset = t.Sub(recorded)
		c.reanchors++
	}
	c.prev, c.prevNow = t, now
	return t
}

// Reanchors counts how often the clock anchored again at the scrape's time.
func (c *ReplayClock) Reanchors() int { return c.reanchors }
