package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Player replays a recording one sample per scrape, at the recording's pace (Next). For
// receivers that read files it keeps a materialized copy of the recorded tree in a directory of
// its own and writes each sample's file values into it before the receiver reads them, so that
// replay runs through the receiver's whole file-reading code; recorded read errors come back
// through Fault. Receiver-specific payloads (Facts, Sample) are handed to the caller with each
// step.
//
// A Player streams its recording: it holds one record at a time (and the latest Facts), never the
// file, so that its memory does not grow with the recording's length; a loop reads the file again
// from its start.
type Player struct {
	src     records
	header  Header
	dir     string
	root    *os.Root // dir, through which the samples' values are written
	ownsDir bool
	loop    bool
	pending *Record // the next sample: read, its Tree and Facts applied, not yet returned
	cur     Record
	// shift maps recorded time to replay time: replayed = recorded + shift.
	shift   time.Duration
	started bool
	laps    int
	// trees counts the Tree records materialized so far.
	trees int
	// facts is the latest Facts payload applied.
	facts []byte
	// first and last are the recorded times of the first lap's first and last samples: with the
	// header's interval, a lap's length.
	first, last time.Time
	seen        bool // first is set
	skipped     int
}

// NewPlayer prepares a replay of a recording held in memory. dir is where the tree is
// materialized; empty means a new temporary directory, removed by Close.
func NewPlayer(rec *Recording, dir string, loop bool) (*Player, error) {
	return newPlayer(&memRecords{rec: rec}, rec.Header, dir, loop)
}

func newPlayer(src records, h Header, dir string, loop bool) (*Player, error) {
	p := &Player{src: src, header: h, dir: dir, loop: loop}
	if dir == "" {
		d, err := os.MkdirTemp("", "iclens-replay-")
		if err != nil {
			_ = src.close()
			return nil, err
		}
		p.dir, p.ownsDir = d, true
	}
	root, err := os.OpenRoot(p.dir)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	p.root = root
	// Apply everything up to the first sample so that discovery finds the tree.
	if err := p.applyUntilSample(); err != nil {
		_ = p.Close()
		return nil, err
	}
	if p.pending == nil {
		_ = p.Close()
		return nil, errors.New("recording has no samples")
	}
	return p, nil
}

// Root is the directory that stands in for the recorded node's root (its sys/ and proc/).
func (p *Player) Root() string { return p.dir }

// Header returns the recording's header.
func (p *Player) Header() Header { return p.header }

// Laps counts how many times a looping replay started over.
func (p *Player) Laps() int { return p.laps }

// Trees counts the Tree records materialized so far (NewPlayer applies the first). A Tree is where
// the recorded receiver discovered its devices again; a replaying receiver that sees the count
// change does the same, and lets go of what it holds of the old tree (open files).
func (p *Player) Trees() int { return p.trees }

func isSample(r Record) bool { return r.Files != nil || r.Errors != nil || r.Sample != nil }

// applyUntilSample reads and applies Tree and Facts records until one that carries readings,
// which it keeps as pending; pending stays nil at the end of the recording.
func (p *Player) applyUntilSample() error {
	for p.pending == nil {
		r, ok, err := p.src.next()
		if err != nil || !ok {
			return err
		}
		if len(r.Tree) > 0 {
			if err := Materialize(p.dir, r.Tree); err != nil {
				return err
			}
			p.trees++
		}
		if r.Facts != nil {
			p.facts = r.Facts
		}
		if isSample(r) {
			p.pending = &r
		}
	}
	return nil
}

// Next moves to the sample due at now: its file values are written into the tree and the record
// is returned. now anchors recorded time to the replay's clock on the first call; after that each
// call moves on by one sample, and by more when the scrape ran so late that the following samples
// are due too (Skipped counts them): the replay keeps the recording's pace as hardware counters
// keep counting while a scrape waits, so that the receivers of one replayed node, each skipping
// its own ticks on a busy machine, stay on the recording's time axis instead of drifting apart by
// every tick one of them missed. At the end of the recording a looping player starts over (time
// keeps moving forward by the recording's length plus one interval); otherwise Next returns false.
func (p *Player) Next(now time.Time) (Record, bool, error) {
	r, ok, err := p.step(now)
	interval := time.Duration(p.header.Interval)
	for ok && err == nil && interval > 0 && !p.Time(r.Time).Add(interval).After(now) {
		next, more, err := p.step(now)
		if err != nil {
			return Record{}, false, err
		}
		if !more {
			break // the end of a replay that does not loop: the last sample stays
		}
		r = next
		p.skipped++
	}
	return r, ok, err
}

// Skipped counts the samples Next moved past because a scrape came too late to read them.
func (p *Player) Skipped() int { return p.skipped }

// step moves to the next sample, whenever it is due.
func (p *Player) step(now time.Time) (Record, bool, error) {
	if err := p.applyUntilSample(); err != nil {
		return Record{}, false, err
	}
	if p.pending == nil {
		if !p.loop {
			return Record{}, false, nil
		}
		p.shift += p.last.Sub(p.first) + time.Duration(p.header.Interval)
		p.laps++
		if err := p.src.rewind(); err != nil {
			return Record{}, false, err
		}
		if err := p.applyUntilSample(); err != nil {
			return Record{}, false, err
		}
		if p.pending == nil {
			return Record{}, false, errors.New("recording has no samples")
		}
	}
	r := *p.pending
	p.pending = nil
	if p.laps == 0 {
		if !p.seen {
			p.first, p.seen = r.Time, true
		}
		p.last = r.Time
	}
	if !p.started {
		p.shift = now.Sub(r.Time)
		p.started = true
	}
	for path, v := range r.Files {
		if !filepath.IsLocal(path) {
			return Record{}, false, fmt.Errorf("recording: file %q of the sample at %s leaves the replay directory", path, r.Time)
		}
		if err := writeFile(p.root, path, []byte(v)); err != nil {
			return Record{}, false, fmt.Errorf("recording: file %q of the sample at %s: %w", path, r.Time, err)
		}
	}
	p.cur = r
	return r, true, nil
}

// Facts returns the latest receiver-specific facts seen up to the current sample (nil if none).
func (p *Player) Facts() []byte { return p.facts }

// Time maps a recorded time to replay time.
func (p *Player) Time(recorded time.Time) time.Time { return recorded.Add(p.shift) }

// Fault returns the error the current sample recorded for the file at abs (a path under Root),
// as the errno the kernel returned, or nil. It fits sysfs.Reader.OnOpen.
func (p *Player) Fault(abs string) error {
	if len(p.cur.Errors) == 0 {
		return nil
	}
	rel, err := filepath.Rel(p.dir, abs)
	if err != nil {
		return nil
	}
	name, ok := p.cur.Errors[rel]
	if !ok {
		return nil
	}
	if errno, ok := errnoByName()[name]; ok {
		return errno
	}
	return errors.New(name)
}

// Close closes the recording and removes the materialized tree if the player created it.
func (p *Player) Close() error {
	if p.src != nil {
		_ = p.src.close()
		p.src = nil
	}
	if p.root != nil {
		_ = p.root.Close()
		p.root = nil
	}
	if p.ownsDir {
		return os.RemoveAll(p.dir)
	}
	return nil
}
