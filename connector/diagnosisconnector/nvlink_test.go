package diagnosisconnector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// nvlinkNodePoints is sample i of a node whose two H100s report their 18 NVLink links (the gpu
// receiver's opt-in gpu.nvlink.link.io, bytes by direction, and gpu.nvlink.link.errors by kind,
// cumulative; receiver/gpureceiver/metadata.yaml): on gpu0 an AllReduce moves 20 GB/s each way
// over every link but link 5, which carries nothing, and link 2 replays 5 times a second; gpu1 is
// idle on every link, so none of its links is judged (a quiet GPU is not a degraded one).
func nvlinkNodePoints(i int, interval float64) []scenario.Point {
	pts := []scenario.Point{
		{Metric: "gpu.info", Value: 1, Attrs: map[string]string{"device": "gpu0", "pci.bus_id": "0000:1b:00.0"}},
		{Metric: "gpu.info", Value: 1, Attrs: map[string]string{"device": "gpu1", "pci.bus_id": "0000:3b:00.0"}},
	}
	t := float64(i) * interval
	for _, gpu := range []string{"gpu0", "gpu1"} {
		for l := range 18 {
			rate := 20e9
			if gpu == "gpu1" || l == 5 {
				rate = 0
			}
			for _, dir := range []string{"transmit", "receive"} {
				pts = append(pts, scenario.Point{Metric: "gpu.nvlink.link.io", Counter: true, Value: rate * t,
					Attrs: map[string]string{"device": gpu, "pci.bus_id": "", "link": fmt.Sprint(l), "direction": dir}})
			}
			replays := 0.0
			if gpu == "gpu0" && l == 2 {
				replays = 5
			}
			for _, kind := range []string{"crc", "replay", "recovery"} {
				v := 0.0
				if kind == "replay" {
					v = replays * t
				}
				pts = append(pts, scenario.Point{Metric: "gpu.nvlink.link.errors", Counter: true, Value: v,
					Attrs: map[string]string{"device": gpu, "pci.bus_id": "", "link": fmt.Sprint(l), "nvlink.error": kind}})
			}
		}
	}
	return pts
}

// nvlinkNodeVerdicts: link_degraded names the link, gpu0's idle link 5 and its erring link 2.
var nvlinkNodeVerdicts = []string{
	scenario.On(verdict.LinkDegraded, "gpu0/nvlink2"),
	scenario.On(verdict.LinkDegraded, "gpu0/nvlink5"),
}

// TestNVLinkDegradedNamesTheLink: with per-link NVLink series, link_degraded names the link that
// carries nothing while its peers are busy, and the one whose data-link errors climb; the
// sentence gives its bytes against its busiest peer's and its errors. A GPU idle on every link
// gets no verdict, and none holds once the link carries its share again.
func TestNVLinkDegradedNamesTheLink(t *testing.T) {
	e := newTestEngine(t, testConfig())
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var got, sentences []string
	for i := range 4 {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		e.ingest(toMetrics("nvl", "", nvlinkNodePoints(i, e.cfg.Interval.Seconds()), at), at)
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		got = holdingOf(md, "nvl")
		for _, r := range records([]plog.Logs{ld}) {
			sentences = append(sentences, r.Body().AsString())
		}
	}
	assert.Equal(t, nvlinkNodeVerdicts, got)
	all := strings.Join(sentences, "\n")
	assert.Contains(t, all, "NVLink 5 of gpu0 carries 0 B/s while its busiest peer link carries 40.0 GB/s")
	assert.Contains(t, all, "NVLink 2 of gpu0 carries 40.0 GB/s while its busiest peer link carries 40.0 GB/s, with 5.0 data-link errors/s")

	// The link comes back: every link at 20 GB/s each way, no more errors.
	for i := 4; i < 8; i++ {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		pts := nvlinkNodePoints(i, e.cfg.Interval.Seconds())
		for k := range pts {
			a := pts[k].Attrs
			switch {
			case pts[k].Metric == "gpu.nvlink.link.io" && a["device"] == "gpu0" && a["link"] == "5":
				pts[k].Value = 20e9 * float64(i-3) * e.cfg.Interval.Seconds()
			case pts[k].Metric == "gpu.nvlink.link.errors" && a["device"] == "gpu0" && a["link"] == "2" && a["nvlink.error"] == "replay":
				pts[k].Value = 5 * 3 * e.cfg.Interval.Seconds()
			}
		}
		e.ingest(toMetrics("nvl", "", pts, at), at)
		md, _ := e.evaluate(at.Add(10 * time.Millisecond))
		got = holdingOf(md, "nvl")
	}
	assert.Empty(t, got, "the links are well again")
}

// TestPromtoolNVLinkDegraded: the generated rules name the same links.
func TestPromtoolNVLinkDegraded(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	pt := promtoolTest{Name: "nvlink", Interval: promDuration(cfg.Interval)}
	series := map[string][]float64{}
	var order []string
	for i := range 6 {
		for _, p := range nvlinkNodePoints(i, cfg.Interval.Seconds()) {
			s := promSeries(p, "nvl")
			if _, ok := series[s]; !ok {
				order = append(order, s)
			}
			series[s] = append(series[s], p.Value)
		}
	}
	for _, s := range order {
		pt.InputSeries = append(pt.InputSeries, inputSeries{Series: s, Values: expand(series[s])})
	}
	expected := map[string][]expAlert{}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == "" {
			continue
		}
		expected[r.Alert] = []expAlert{}
		for _, v := range nvlinkNodeVerdicts {
			verdict, device, _ := strings.Cut(v, "@")
			if alertName(verdict) != r.Alert {
				continue
			}
			labels := map[string]string{nodeLabel: "nvl", "verdict": verdict, "severity": r.Labels["severity"], "device": device}
			expected[r.Alert] = append(expected[r.Alert], expAlert{ExpLabels: labels, ExpAnnotations: expandAnnotations(r.Annotations, labels)})
		}
	}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert != "" {
			pt.AlertRuleTest = append(pt.AlertRuleTest, alertRuleTest{EvalTime: promDuration(4 * cfg.Interval), Alertname: r.Alert, ExpAlerts: expected[r.Alert]})
		}
	}
	runPromtoolTest(t, bin, cfg.Interval, rules, pt)
}
