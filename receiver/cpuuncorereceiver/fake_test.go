package cpuuncorereceiver

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// fakeOpener is a counter source with known counts: the test adds counts per (CPU, event) as
// hardware would, and a group reads what accumulated since it was opened, exactly as a
// perf_event_open counter does.
type fakeOpener struct {
	counts map[fakeKey]uint64
	// runningPercent < 100 makes every group report time_running < time_enabled and values
	// reduced accordingly, as the kernel does when it multiplexes.
	runningPercent uint64
	// openErr, when it returns an error, makes OpenGroup fail.
	openErr func(cpu int, attrs []perf.Attr) error
	// readErr, when it returns an error, makes a group's Read fail.
	readErr func(cpu int, attrs []perf.Attr) error

	groups         []*fakeGroup
	opened, closed int
	// reads counts Read calls: each is one read(2) on the real source.
	reads int
}

type fakeKey struct {
	cpu  int
	attr perf.Attr
}

func newFakeOpener() *fakeOpener {
	return &fakeOpener{counts: map[fakeKey]uint64{}, runningPercent: 100}
}

// add counts n events of (type, config) on cpu.
func (f *fakeOpener) add(cpu int, typ uint32, config uint64, n uint64) {
	f.counts[fakeKey{cpu, perf.Attr{Type: typ, Config: config}}] += n
}

func (f *fakeOpener) OpenGroup(cpu int, attrs []perf.Attr) (perf.Group, error) {
	if f.openErr != nil {
		if err := f.openErr(cpu, attrs); err != nil {
			return nil, &perf.OpenError{Attr: attrs[0], CPU: cpu, Err: err}
		}
	}
	g := &fakeGroup{f: f, cpu: cpu, attrs: append([]perf.Attr(nil), attrs...), base: make([]uint64, len(attrs))}
	for i, a := range attrs {
		g.base[i] = f.counts[fakeKey{cpu, a}]
	}
	f.opened++
	f.groups = append(f.groups, g)
	return g, nil
}

type fakeGroup struct {
	f       *fakeOpener
	cpu     int
	attrs   []perf.Attr
	base    []uint64
	closed  bool
	enabled uint64
}

func (g *fakeGroup) Read(r *perf.Reading) error {
	if g.closed {
		return fmt.Errorf("read of a closed group")
	}
	if g.f.readErr != nil {
		if err := g.f.readErr(g.cpu, g.attrs); err != nil {
			return err
		}
	}
	g.f.reads++
	g.enabled += 1_000_000_000
	r.Enabled = g.enabled
	r.Running = g.enabled * g.f.runningPercent / 100
	for i, a := range g.attrs {
		r.Values[i] = (g.f.counts[fakeKey{g.cpu, a}] - g.base[i]) * g.f.runningPercent / 100
	}
	return nil
}

func (g *fakeGroup) Close() error {
	if g.closed {
		return fmt.Errorf("closed twice")
	}
	g.closed = true
	g.f.closed++
	return nil
}

// openAttrs returns the configs of the open groups on pmu type typ and cpu.
func (f *fakeOpener) openAttrs(typ uint32, cpu int) [][]uint64 {
	var out [][]uint64
	for _, g := range f.groups {
		if g.closed || g.cpu != cpu || g.attrs[0].Type != typ {
			continue
		}
		var cfgs []uint64
		for _, a := range g.attrs {
			cfgs = append(cfgs, a.Config)
		}
		out = append(out, cfgs)
	}
	return out
}

type testScraper struct {
	*uncoreScraper
	t     testing.TB
	fake  *fakeOpener
	logs  *observer.ObservedLogs
	clock time.Time
}

func (ts *testScraper) tick(d time.Duration) { ts.clock = ts.clock.Add(d) }

// newTestScraper starts a scraper on a fixture tree (testdata/<fixture>) with a fake counter
// source and a controllable clock.
func newTestScraper(t testing.TB, fixture string, edit func(*Config)) *testScraper {
	return newTestScraperWith(t, fixture, edit, nil)
}

// newTestScraperWith is newTestScraper with before run on the scraper before it starts.
func newTestScraperWith(t testing.TB, fixture string, edit func(*Config), before func(*uncoreScraper)) *testScraper {
	return newTestScraperOn(t, nil, fixture, edit, before)
}

// newTestScraperOn is newTestScraperWith started on host (one with a capture extension).
func newTestScraperOn(t testing.TB, host component.Host, fixture string, edit func(*Config), before func(*uncoreScraper)) *testScraper {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath, _ = filepath.Abs(filepath.Join("testdata", fixture))
	if edit != nil {
		edit(cfg)
	}
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	fake := newFakeOpener()
	live := func() (perf.Opener, error) { return fake, nil }
	ts := &testScraper{uncoreScraper: newScraper(cfg, set, live), t: t, fake: fake, logs: logs,
		clock: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	ts.now = func() time.Time { return ts.clock }
	if before != nil {
		before(ts.uncoreScraper)
	}
	require.NoError(t, ts.start(t.Context(), host))
	t.Cleanup(func() { _ = ts.shutdown(t.Context()) })
	return ts
}

// point is one interconnect.io data point.
type point struct {
	value int64
	start pcommon.Timestamp
}

// ioKey is the attributes of one interconnect.io point.
type ioKey struct {
	component, direction, device, busID string
	numa                                int64
}

// io names an interconnect.io point by its attributes.
func io(component, direction, device, busID string, numa int64) ioKey {
	return ioKey{component, direction, device, busID, numa}
}

// ioPoints returns the interconnect.io points (metrictest.Points) by their attributes, after
// checking that the metric is a monotonic sum and that no two points share attributes.
func ioPoints(t testing.TB, md pmetric.Metrics) map[ioKey]point {
	for _, m := range metrictest.Metrics(md, "interconnect.io") {
		require.Equal(t, pmetric.MetricTypeSum, m.Type())
		require.True(t, m.Sum().IsMonotonic())
	}
	out := map[ioKey]point{}
	for _, dp := range metrictest.Points(md, "interconnect.io") {
		a := dp.Attributes()
		get := func(k string) string { v, _ := a.Get(k); return v.Str() }
		numa, _ := a.Get("numa.node")
		key := io(get("component"), get("direction"), get("device"), get("pci.bus_id"), numa.Int())
		_, dup := out[key]
		require.False(t, dup, "duplicate point %v", key)
		out[key] = point{dp.IntValue(), dp.StartTimestamp()}
	}
	return out
}

// forEachMetric calls fn with every metric named name.
func forEachMetric(md pmetric.Metrics, name string, fn func(pmetric.Metric)) {
	for _, m := range metrictest.Metrics(md, name) {
		fn(m)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// messages returns the log entries at level or above, each as its message followed by its fields
// (key=value, sorted), so that a test can look for a value the receiver put in a field.
func messages(logs *observer.ObservedLogs, level zapcore.Level) []string {
	var out []string
	for _, e := range logs.All() {
		if e.Level >= level {
			out = append(out, entryText(e))
		}
	}
	return out
}

// logged returns the log entries at exactly level that mention sub, in the message or a field.
func logged(ts *testScraper, level zapcore.Level, sub string) []string {
	var out []string
	for _, e := range ts.logs.All() {
		if t := entryText(e); e.Level == level && strings.Contains(t, sub) {
			out = append(out, t)
		}
	}
	return out
}

func entryText(e observer.LoggedEntry) string {
	ctx := e.ContextMap()
	var b strings.Builder
	b.WriteString(e.Message)
	for _, k := range keys(ctx) {
		fmt.Fprintf(&b, " %s=%v", k, ctx[k])
	}
	return b.String()
}

// partialFailed returns the number of points a partial scrape error says were lost.
func partialFailed(t testing.TB, err error) int {
	var pe scrapererror.PartialScrapeError
	require.ErrorAs(t, err, &pe)
	return pe.Failed
}
