package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Ring keeps the newest records a recorder writes, in memory, so that the last few seconds at
// full resolution (the fast sampler's passes in each scrape's sample) can be written as a
// recording when they turn out to matter: a verdict raised, an operator asking (internal/capture).
// It keeps the static facts whole (every Tree entry by path, the newest one winning, as a
// replay applies them; the newest Facts) and the samples of the last window, each held encoded so
// that its cost is its size on disk, and never more than maxBytes of them: a node whose samples
// grow (ports added) loses its oldest samples, not the bound.
type Ring struct {
	window   time.Duration
	maxBytes int

	mu       sync.Mutex
	tree     map[string]Entry
	order    []string // tree paths in the order first seen: parents before their children
	treeTime time.Time
	facts    json.RawMessage
	samples  []ringSample
	bytes    int
}

type ringSample struct {
	t    time.Time
	line []byte // the record, encoded
}

// NewRing keeps the samples of the last window, at most maxBytes of them encoded.
func NewRing(window time.Duration, maxBytes int) *Ring {
	return &Ring{window: window, maxBytes: maxBytes, tree: map[string]Entry{}}
}

// Write keeps a record (the Writer's method, so that a recorder writes to either).
func (r *Ring) Write(rec Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range rec.Tree {
		if _, ok := r.tree[e.Path]; !ok {
			r.order = append(r.order, e.Path)
		}
		r.tree[e.Path] = e
		r.treeTime = rec.Time
	}
	if rec.Facts != nil {
		r.facts = rec.Facts
	}
	if !isSample(rec) {
		return nil
	}
	line, err := json.Marshal(Record{Time: rec.Time, Files: rec.Files, Errors: rec.Errors, Sample: rec.Sample})
	if err != nil {
		return fmt.Errorf("recording ring: %w", err)
	}
	r.samples = append(r.samples, ringSample{t: rec.Time, line: line})
	r.bytes += len(line)
	// Keep the window before the newest sample, and one sample older than it: the scrape whose
	// interval the window starts in.
	for len(r.samples) > 1 && (r.bytes > r.maxBytes || rec.Time.Sub(r.samples[1].t) >= r.window) {
		r.bytes -= len(r.samples[0].line)
		r.samples[0] = ringSample{}
		r.samples = r.samples[1:]
	}
	return nil
}

// Window is how much of the newest samples the ring keeps.
func (r *Ring) Window() time.Duration { return r.window }

// Close is the Writer's; a ring has no file.
func (r *Ring) Close() error { return nil }

// Len is the number of samples kept.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.samples)
}

// ErrRingEmpty is WriteTo's error before the ring has kept a sample.
var ErrRingEmpty = errors.New("the ring has no sample yet")

// WriteTo writes what the ring holds as a recording at path (Create: a new file, numbered beside
// an existing one) with header h: the facts, the tree as one Tree record at the oldest sample's
// time or before, then the samples. It returns the file written.
func (r *Ring) WriteTo(path string, h Header) (string, error) {
	r.mu.Lock()
	tree := make([]Entry, 0, len(r.order))
	for _, p := range r.order {
		tree = append(tree, r.tree[p])
	}
	treeTime, facts := r.treeTime, r.facts
	samples := append([]ringSample(nil), r.samples...)
	r.mu.Unlock()
	if len(samples) == 0 {
		return "", ErrRingEmpty
	}
	if treeTime.IsZero() || treeTime.After(samples[0].t) {
		treeTime = samples[0].t
	}
	w, err := Create(path, h)
	if err != nil {
		return "", err
	}
	err = w.Write(Record{Time: treeTime, Tree: tree, Facts: facts})
	for _, s := range samples {
		if err != nil {
			break
		}
		err = w.writeLine(s.line)
	}
	err = errors.Join(err, w.Close())
	return w.Path(), err
}
