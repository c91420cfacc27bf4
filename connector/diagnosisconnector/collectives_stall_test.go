package diagnosisconnector

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// Two communicators of one node, as the nccl receiver's RAS source reports them: 0xa (the data
// parallel AllReduce) advances by one operation a sample until sample stopA, 0xb (a pipeline's
// Broadcast) until sample stopB; every rank runs.
const stopB, stopA = 10, 30

func twoCommPoints(i int) []scenario.Point {
	count := func(stop int) float64 { return float64(min(i, stop)) }
	var pts []scenario.Point
	for _, c := range []struct {
		comm, op string
		stop     int
	}{{"0xa", "AllReduce", stopA}, {"0xb", "Broadcast", stopB}} {
		for _, b := range []string{"min", "max"} {
			pts = append(pts, scenario.Point{Metric: "nccl.ras.operations", Value: count(c.stop),
				Attrs: map[string]string{"nccl.comm.id": c.comm, "nccl.collective": c.op, "bound": b}})
		}
		pts = append(pts, scenario.Point{Metric: "nccl.ras.ranks", Value: 2,
			Attrs: map[string]string{"nccl.comm.id": c.comm, "nccl.comm.size": "2", "rank.state": "running"}})
	}
	return pts
}

// stalledB is when 0xb must be stalled, in samples (the counts' interval): from the evaluation at
// which the sample before its last change (stopB-1) is older than the collective_stall_after range
// (hold evaluations later), until the same for 0xa's last change; nothing is stalled when no
// communicator advances (a checkpoint, the end of the job).
func stalledB(i, stallSamples, hold int) bool {
	return i >= stopB+stallSamples+hold-1 && i <= stopA-1+stallSamples
}

// TestStalledCommunicatorByItsCount: 0xb's count stands still while 0xa's advances: 0xb is
// stalled after collective_stall_after (and hold), 0xa never; once both stand still, neither.
func TestStalledCommunicatorByItsCount(t *testing.T) {
	cfg := testConfig()
	cfg.CollectiveStallAfter = 5 * time.Second
	e := newTestEngine(t, cfg)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	stall := int(cfg.CollectiveStallAfter / cfg.Interval)
	for i := range 45 {
		at := start.Add(time.Duration(i) * cfg.Interval)
		e.ingest(toMetrics("node1", "", twoCommPoints(i), at), at)
		md, _ := e.evaluate(at.Add(10 * time.Millisecond))
		got := holdingOf(md, "node1")
		want := []string(nil)
		if stalledB(i, stall, cfg.Hold) {
			want = []string{scenario.On(verdict.CollectiveStalled, "0xb")}
		}
		assert.Equal(t, want, got, "sample %d", i)
	}
}

// TestPromtoolStalledCommunicatorByItsCount: the generated rules say the same at the default
// interval and collective_stall_after.
func TestPromtoolStalledCommunicatorByItsCount(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	const samples = 45
	values := map[string][]float64{}
	var keys []string
	for i := range samples {
		for _, p := range twoCommPoints(i) {
			k := promSeries(p, "node1")
			if _, ok := values[k]; !ok {
				keys = append(keys, k)
			}
			values[k] = append(values[k], p.Value)
		}
	}
	pt := promtoolTest{Name: "two communicators", Interval: promDuration(cfg.Interval)}
	for _, k := range keys {
		pt.InputSeries = append(pt.InputSeries, inputSeries{Series: k, Values: expand(values[k])})
	}
	stall := int(cfg.CollectiveStallAfter / cfg.Interval)
	var alert Rule
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == alertName(verdict.CollectiveStalled) {
			alert = r
		}
	}
	for i := 1; i < samples; i++ {
		art := alertRuleTest{EvalTime: promDuration(time.Duration(i) * cfg.Interval), Alertname: alert.Alert, ExpAlerts: []expAlert{}}
		if stalledB(i, stall, cfg.Hold) {
			labels := map[string]string{nodeLabel: "node1", "verdict": verdict.CollectiveStalled, "severity": alert.Labels["severity"], "device": "0xb"}
			art.ExpAlerts = append(art.ExpAlerts, expAlert{ExpLabels: labels, ExpAnnotations: expandAnnotations(alert.Annotations, labels)})
		}
		pt.AlertRuleTest = append(pt.AlertRuleTest, art)
	}
	runPromtoolTest(t, bin, cfg.Interval, rules, pt)
}

// runPromtoolTest runs promtool rule unit tests of rules, evaluated at interval, and returns
// promtool's output.
func runPromtoolTest(t *testing.T, bin string, interval time.Duration, rules RuleFile, pts ...promtoolTest) string {
	t.Helper()
	rulesYAML, err := rules.YAML()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o600))
	tests, err := yaml.Marshal(promtoolFile{RuleFiles: []string{"rules.yaml"}, EvaluationInterval: promDuration(interval), Tests: pts})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.yaml"), tests, 0o600))
	cmd := exec.Command(bin, "test", "rules", "test.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}
