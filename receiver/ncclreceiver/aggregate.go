package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"math"
	"sync"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/histogram"
)

// seriesKey is what one series is: the node, the communicator, the rank in it, the operation and
// the message-size bucket. coll_sn and the timestamps are never part of it.
type seriesKey struct {
	host   string
	commID string
	rank   int64
	op     string
	bucket string
}

// series is the running aggregate of one seriesKey since the receiver started.
type series struct {
	commName string
	nranks   int64
	nnodes   int64
	busID    string
	first    time.Time
	last     time.Time
	lastSN   uint64
	haveSN   bool

	samples   int64
	bytes     uint64
	lastBusBw float64
	busBw     histogram.Explicit
	duration  histogram.Explicit
}

// Bucket bounds. Bus bandwidth in GB/s spans a TCP fallback (a few GB/s, areal-project/AReaL#639)
// to NVLink 5 (NVIDIA quotes 900 GB/s a direction for B200); the duration in microseconds spans a
// small latency-bound collective to a multi-second stall.
var (
	busBwBounds    = []float64{1, 2, 5, 10, 20, 50, 100, 200, 300, 400, 600, 800, 1000}
	durationBounds = []float64{10, 50, 100, 500, 1e3, 5e3, 1e4, 5e4, 1e5, 5e5, 1e6, 5e6}
)

// aggregator turns Inspector records into series. It is fed from the file consumer's goroutine
// and read by the scrape.
type aggregator struct {
	mu             sync.Mutex
	series         map[seriesKey]*series
	comms          map[string]struct{} // host + commID
	maxComms       int
	outcomes       map[string]int64
	staleAfter     time.Duration
	busIDOf        func(host string, pid int64) string
	duplicateSkips int64
}

func newAggregator(maxComms int, staleAfter time.Duration, busIDOf func(string, int64) string) *aggregator {
	return &aggregator{
		series:     map[seriesKey]*series{},
		comms:      map[string]struct{}{},
		maxComms:   maxComms,
		outcomes:   map[string]int64{},
		staleAfter: staleAfter,
		busIDOf:    busIDOf,
	}
}

// count records what became of a line.
func (a *aggregator) count(outcome string) {
	a.mu.Lock()
	a.outcomes[outcome]++
	a.mu.Unlock()
}

// add takes one record seen at now. It returns false when the record was left out because the
// node already has maxComms communicators.
func (a *aggregator) add(r record, now time.Time) bool {
	key := seriesKey{host: r.hostname, commID: r.commID, rank: r.rank, op: r.op, bucket: sizeBucket(r.msgBytes)}
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.series[key]
	if !ok {
		comm := r.hostname + "\x00" + r.commID
		if _, known := a.comms[comm]; !known {
			if len(a.comms) >= a.maxComms {
				a.outcomes[outcomeOverLimit]++
				return false
			}
			a.comms[comm] = struct{}{}
		}
		s = &series{first: now}
		if a.busIDOf != nil {
			s.busID = a.busIDOf(r.hostname, r.pid)
		}
		a.series[key] = s
	}
	// The same operation read again (a file copied back, a dump repeated) is not a new sample.
	if r.hasSN && s.haveSN && r.sn == s.lastSN {
		a.duplicateSkips++
		a.outcomes[outcomeIgnored]++
		return true
	}
	s.commName, s.nranks, s.nnodes = r.commName, r.nranks, r.nnodes
	s.last = now
	s.lastSN, s.haveSN = r.sn, r.hasSN
	s.samples++
	s.bytes += r.msgBytes
	s.duration.Observe(durationBounds, r.execUs)
	if !math.IsNaN(r.busBwGBs) {
		s.busBw.Observe(busBwBounds, r.busBwGBs)
		s.lastBusBw = r.busBwGBs
	}
	a.outcomes[outcomeAccepted]++
	return true
}

// expire drops the series (and communicators) that took no record for staleAfter: a job that
// ended takes its series along instead of keeping them forever.
func (a *aggregator) expire(now time.Time) {
	if a.staleAfter <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	live := map[string]struct{}{}
	for k, s := range a.series {
		if now.Sub(s.last) > a.staleAfter {
			delete(a.series, k)
			continue
		}
		live[k.host+"\x00"+k.commID] = struct{}{}
	}
	a.comms = live
}

// snapshot copies the series for one scrape.
func (a *aggregator) snapshot() (map[seriesKey]series, map[string]int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[seriesKey]series, len(a.series))
	for k, s := range a.series {
		c := *s
		c.busBw, c.duration = s.busBw.Copy(), s.duration.Copy()
		out[k] = c
	}
	oc := make(map[string]int64, len(a.outcomes))
	for k, v := range a.outcomes {
		oc[k] = v
	}
	return out, oc
}

// Outcomes of a line (the outcome attribute's values).
const (
	outcomeAccepted           = "accepted"
	outcomeMalformed          = "malformed"
	outcomeUnsupportedVersion = "unsupported_version"
	outcomeIgnored            = "ignored"
	outcomeOverLimit          = "over_limit"
)
