package simulate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// The NCCL side of the cases a replay written beforehand cannot show: a transition's Inspector
// records (the nccl receiver reads a dump written before it started all at once, so a phase change
// would be one instant) and a RAS service whose answer changes when a rank dies. While the demo
// runs, Live writes them one sample an interval, as NCCL would: each node's Inspector dump grows by
// the sample's record, and a RAS server per node (internal/fakeras, NCCL's client protocol)
// answers with the job's status at that sample.

// LiveNCCLCases are the NCCL cases of more than one phase (scenario.NCCLCases): those Live feeds.
func LiveNCCLCases() []scenario.Case {
	var out []scenario.Case
	for _, c := range scenario.NCCLCases() {
		if len(c.Phases) > 1 {
			out = append(out, c)
		}
	}
	return out
}

// Live feeds the NCCL side of live cases (LiveNCCLCases) sample by sample.
type Live struct {
	dir      string
	interval time.Duration
	samples  int
	cases    []scenario.Case
	runs     map[string][]*scenario.NCCLRun // case -> node -> its job's run so far
	dumps    map[string][]*os.File          // case -> node -> its Inspector dump
	ras      map[string]*fakeras.Server     // host.name -> its RAS service
	next     int                            // the sample the next Step writes, counting laps
}

// StartLive creates the cases' empty dumps under o.Dir/<case>/nccl (as WriteNCCL names them) and
// starts a RAS service on loopback for each of their nodes. A lap is o.Samples samples, the
// looping replay's length: each lap starts the job over, as the replayed hardware starts over.
func StartLive(o Options, cases []scenario.Case) (*Live, error) {
	if o.Interval <= 0 || o.Samples < 2 {
		return nil, fmt.Errorf("simulate: need an interval and at least 2 samples")
	}
	l := &Live{dir: o.Dir, interval: o.Interval, samples: o.Samples, cases: cases,
		runs: map[string][]*scenario.NCCLRun{}, dumps: map[string][]*os.File{}, ras: map[string]*fakeras.Server{}}
	for _, c := range cases {
		dir := filepath.Join(o.Dir, c.Name, "nccl")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, errors.Join(err, l.Close())
		}
		for n, node := range scenario.Nodes {
			f, err := os.Create(filepath.Join(dir, inspectorDumpName(c, n)))
			if err != nil {
				return nil, errors.Join(err, l.Close())
			}
			l.dumps[c.Name] = append(l.dumps[c.Name], f)
			srv, err := fakeras.Listen("127.0.0.1:0", "")
			if err != nil {
				return nil, errors.Join(fmt.Errorf("simulate: RAS service of %s: %w", scenario.HostName(c, node), err), l.Close())
			}
			l.ras[scenario.HostName(c, node)] = srv
		}
	}
	l.startLap()
	return l, nil
}

// RAS is each live node's RAS endpoint by host.name, for NCCLSources.RAS.
func (l *Live) RAS() map[string]string {
	out := make(map[string]string, len(l.ras))
	for host, srv := range l.ras {
		out[host] = srv.Addr()
	}
	return out
}

// Sample is the sample within its lap that the next Step writes.
func (l *Live) Sample() int { return l.next % l.samples }

// startLap starts every job over: new runs, empty dumps.
func (l *Live) startLap() {
	for _, c := range l.cases {
		runs := make([]*scenario.NCCLRun, len(scenario.Nodes))
		for n := range runs {
			runs[n] = c.NCCLRun(n, l.interval.Seconds())
		}
		l.runs[c.Name] = runs
	}
}

// Step writes the next sample, dumped at at: each node's record, if an operation completed in it,
// appended to its dump, and each node's RAS service set to the job's status.
func (l *Live) Step(at time.Time) error {
	i := l.Sample()
	if i == 0 && l.next > 0 {
		l.startLap()
		for _, files := range l.dumps {
			for _, f := range files {
				if err := f.Truncate(0); err != nil {
					return err
				}
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					return err
				}
			}
		}
	}
	l.next++
	for _, c := range l.cases {
		var status string
		for n := range scenario.Nodes {
			s := l.runs[c.Name][n].Next(i)
			if rec := inspectorRecord(c, n, s, at); rec != "" {
				if _, err := l.dumps[c.Name][n].WriteString(rec); err != nil {
					return err
				}
			}
			if n == 0 {
				status = rasStatusOf(c, s) // RASStatus: the job as node 0's run counts it
			}
		}
		for _, node := range scenario.Nodes {
			l.ras[scenario.HostName(c, node)].Set(status)
		}
	}
	return nil
}

// Close stops the RAS services and closes the dumps.
func (l *Live) Close() error {
	var errs []error
	hosts := make([]string, 0, len(l.ras))
	for h := range l.ras {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		l.ras[h].Close()
	}
	for _, files := range l.dumps {
		for _, f := range files {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}
