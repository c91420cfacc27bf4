package simulate

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// Options controls what Write produces.
type Options struct {
	// Dir receives <case>/<node>-<receiver>.jsonl.
	Dir string
	// Interval between samples; the replaying receivers use it as collection_interval.
	Interval time.Duration
	// Samples per recording; a looping replay starts over after them.
	Samples int
	// UncoreFixture is the host tree for the cpuuncore recordings
	// (receiver/cpuuncorereceiver/testdata/skx).
	UncoreFixture string
	// Start is the recorded time of the first sample.
	Start time.Time
}

// Write writes the recordings of every case and returns their paths.
func Write(o Options) ([]string, error) { return WriteCases(o, scenario.Cases()) }

// WriteCases writes the recordings of cases and returns their paths.
func WriteCases(o Options, cases []scenario.Case) ([]string, error) {
	if o.Interval <= 0 || o.Samples < 2 {
		return nil, fmt.Errorf("simulate: need an interval and at least 2 samples")
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	}
	host, err := loadUncoreHost(o.UncoreFixture)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range cases {
		dir := filepath.Join(o.Dir, c.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for n, node := range scenario.Nodes {
			p, err := writeNode(o, host, c, n, dir, node)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", c.Name, node, err)
			}
			paths = append(paths, p...)
		}
	}
	return paths, nil
}

func writeNode(o Options, host *uncoreHost, c scenario.Case, n int, dir, node string) ([]string, error) {
	// The devices are those of the first phase; the traffic follows the phases.
	tr := c.Phases[0].Nodes[n]
	header := func(receiver string) recording.Header {
		return recording.Header{Receiver: receiver, Host: node, Created: o.Start, Interval: recording.Duration(o.Interval),
			Note: "simulated " + c.Name + ": " + c.Note}
	}
	open := func(receiver string) (*recording.Writer, string, error) {
		p := filepath.Join(dir, node+"-"+receiver+".jsonl")
		w, err := recording.Create(p, header(receiver))
		return w, p, err
	}
	rw, rp, err := open("rnic")
	if err != nil {
		return nil, err
	}
	uw, up, err := open("cpuuncore")
	if err != nil {
		return nil, err
	}
	gw, gp, err := open("gpu")
	if err != nil {
		return nil, err
	}
	write := func() error {
		if err := rw.Write(recording.Record{Time: o.Start, Tree: rnicTree(tr)}); err != nil {
			return err
		}
		if err := uw.Write(recording.Record{Time: o.Start, Tree: append(append([]recording.Entry(nil), host.tree...), pciEntries(tr)...)}); err != nil {
			return err
		}
		if err := gw.Write(recording.Record{Time: o.Start, Facts: gpuFacts(n, o.Interval)}); err != nil {
			return err
		}
		rc := newRNICCounters(c, o.Start, o.Interval)
		var uc uncoreCounters
		dt := o.Interval.Seconds()
		for i := range o.Samples {
			at := o.Start.Add(time.Duration(i+1) * o.Interval)
			now := c.At(i, n)
			files, eth := rc.step(now, i, n, dt)
			if err := rw.Write(recording.Record{Time: at, Files: files, Sample: eth}); err != nil {
				return err
			}
			if err := uw.Write(recording.Record{Time: at, Sample: uc.step(host, now, i, n, dt)}); err != nil {
				return err
			}
			if err := gw.Write(recording.Record{Time: at, Sample: gpuSample(now, i, n, at)}); err != nil {
				return err
			}
		}
		return nil
	}
	err = write()
	for _, w := range []*recording.Writer{rw, uw, gw} {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	return []string{rp, up, gp}, err
}
