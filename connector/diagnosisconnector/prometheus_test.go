package diagnosisconnector

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

var update = flag.Bool("update", false, "rewrite the generated Prometheus rules, PrometheusRule and promtool tests")

// The generated files, relative to this package.
var (
	rulesFile     = filepath.Join("..", "..", "examples", "prometheus", "iclens-diagnosis.rules.yaml")
	rulesTestFile = filepath.Join("..", "..", "examples", "prometheus", "iclens-diagnosis.rules.test.yaml")
	k8sRuleFile   = filepath.Join("..", "..", "examples", "kubernetes", "prometheusrule.yaml")
)

func generated(t *testing.T) map[string][]byte {
	t.Helper()
	rules := PrometheusRules(createDefaultConfig())
	r, err := rules.YAML()
	require.NoError(t, err)
	k, err := rules.PrometheusRuleYAML("otelcol-iclens")
	require.NoError(t, err)
	tests, err := promtoolTests(createDefaultConfig())
	require.NoError(t, err)
	return map[string][]byte{rulesFile: r, k8sRuleFile: k, rulesTestFile: tests}
}

// TestPrometheusRulesUpToDate fails when a committed rules file is not what the definition
// generates; -update rewrites them.
func TestPrometheusRulesUpToDate(t *testing.T) {
	for path, want := range generated(t) {
		if *update {
			require.NoError(t, os.WriteFile(path, want, 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./connector/diagnosisconnector -update")
		// Not assert.Equal: the test file is large, its diff would bury the message.
		assert.True(t, bytes.Equal(want, got), "%s is stale: run go test ./connector/diagnosisconnector -update", path)
	}
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; .ci/run installs Debian's prometheus package, which ships it")
		}
		t.Skip("no promtool: apt-get install prometheus to check and test the generated rules")
	}
	return p
}

// TestPromtoolCheckRules: the generated rules are valid for Prometheus (promtool check rules).
func TestPromtoolCheckRules(t *testing.T) {
	bin := promtool(t)
	out, err := exec.Command(bin, "check", "rules", rulesFile).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// TestPromtoolTestRules runs the rule unit tests built from the simulated cases (promtool test
// rules): in each phase of each case, the alerts that fire are the phase's verdicts, from the
// evaluation after the phase's first sample on (2 intervals after its traffic began), and none
// other; the steady healthy cases for 10 minutes.
func TestPromtoolTestRules(t *testing.T) {
	bin := promtool(t)
	cmd := exec.Command(bin, "test", "rules", filepath.Base(rulesTestFile))
	cmd.Dir = filepath.Dir(rulesTestFile)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// promtool's unit test file format (Prometheus docs, "Unit testing for rules").
type (
	promtoolFile struct {
		RuleFiles          []string       `yaml:"rule_files"`
		EvaluationInterval string         `yaml:"evaluation_interval"`
		Tests              []promtoolTest `yaml:"tests"`
	}
	promtoolTest struct {
		Name          string          `yaml:"name"`
		Interval      string          `yaml:"interval"`
		InputSeries   []inputSeries   `yaml:"input_series"`
		AlertRuleTest []alertRuleTest `yaml:"alert_rule_test"`
	}
	inputSeries struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	alertRuleTest struct {
		EvalTime  string     `yaml:"eval_time"`
		Alertname string     `yaml:"alertname"`
		ExpAlerts []expAlert `yaml:"exp_alerts"`
	}
	expAlert struct {
		ExpLabels      map[string]string `yaml:"exp_labels"`
		ExpAnnotations map[string]string `yaml:"exp_annotations"`
	}
)

// inputSeriesOf is a node's stream as promtool input series of host: one per series, a counter
// as its running sum.
func inputSeriesOf(stream [][]scenario.Point, host string) []inputSeries {
	values := map[string][]float64{}
	counters := map[string]bool{}
	var keys []string
	for _, pts := range stream {
		for _, p := range pts {
			k := promSeries(p, host)
			if _, ok := values[k]; !ok {
				keys = append(keys, k)
			}
			values[k] = append(values[k], p.Value)
			counters[k] = p.Counter
		}
	}
	out := make([]inputSeries, 0, len(keys))
	for _, k := range keys {
		v := values[k]
		if counters[k] {
			v = integral(v)
		}
		out = append(out, inputSeries{Series: k, Values: expand(v)})
	}
	return out
}

// promtoolTests builds the rule unit tests from the simulated cases: every case's two nodes as
// the receivers report them (scenario.SteadyStream: straight counters within a phase), sampled at
// the rules' interval, and the alerts expected at the checkpoints of each phase.
func promtoolTests(cfg *Config) ([]byte, error) {
	rules := PrometheusRules(cfg)
	annotations := map[string]map[string]string{}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert != "" {
			annotations[r.Alert] = r.Annotations
		}
	}
	interval := cfg.Interval
	f := promtoolFile{RuleFiles: []string{filepath.Base(rulesFile)}, EvaluationInterval: promDuration(interval)}
	for _, c := range scenario.StreamCases() {
		samples := 60 // 10 minutes at the default 10 s interval
		if last := c.Phases[len(c.Phases)-1].From; last >= scenario.TransitionFault {
			samples = scenario.TransitionSamples
		}
		pt := promtoolTest{Name: c.Name, Interval: promDuration(interval)}
		for n, node := range scenario.Nodes {
			pt.InputSeries = append(pt.InputSeries, inputSeriesOf(c.SteadyStream(n, samples, interval.Seconds()), scenario.HostName(c, node))...)
		}
		// Checkpoints: a phase's verdicts fire from the evaluation after its first sample on
		// (hold: two evaluations; the first raised at the phase's first sample), and hold until
		// its last; a steady case is also checked in the middle.
		var checks []int
		for p, ph := range c.Phases {
			end := samples - 1
			if p+1 < len(c.Phases) {
				end = c.Phases[p+1].From - 1
			}
			first := max(ph.From+cfg.Hold-1, ph.From+ph.ClearWithin-1)
			if p == 0 {
				first++ // a rate needs two samples
			}
			checks = append(checks, first, (first+end)/2, end)
		}
		for _, k := range dedupe(checks) {
			ph := c.Phases[c.PhaseAt(k)]
			for _, v := range verdict.Names() {
				name := alertName(v)
				art := alertRuleTest{EvalTime: promDuration(time.Duration(k) * interval), Alertname: name, ExpAlerts: []expAlert{}}
				for n, node := range scenario.Nodes {
					for _, e := range ph.Expect[n] {
						verdict, device, _ := strings.Cut(e, "@")
						if verdict != v {
							continue
						}
						labels := map[string]string{nodeLabel: scenario.HostName(c, node), "verdict": v, "severity": rulesSeverity(rules, name)}
						if device != "" {
							labels["device"] = device
						}
						art.ExpAlerts = append(art.ExpAlerts, expAlert{ExpLabels: labels, ExpAnnotations: expandAnnotations(annotations[name], labels)})
					}
				}
				pt.AlertRuleTest = append(pt.AlertRuleTest, art)
			}
		}
		f.Tests = append(f.Tests, pt)
	}
	var b bytes.Buffer
	b.WriteString("# Generated by connector/diagnosisconnector from the simulated cases (internal/scenario): promtool\n")
	b.WriteString("# test rules iclens-diagnosis.rules.test.yaml. Do not edit: go test ./connector/diagnosisconnector -update.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

func rulesSeverity(f RuleFile, alert string) string {
	for _, r := range f.Groups[0].Rules {
		if r.Alert == alert {
			return r.Labels["severity"]
		}
	}
	return ""
}

// expandAnnotations renders the {{ $labels.x }} of the generated annotations.
func expandAnnotations(a map[string]string, labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		for l, lv := range labels {
			v = strings.ReplaceAll(v, "{{ $labels."+l+" }}", lv)
		}
		out[k] = v
	}
	return out
}

// promSeries is a point's series in Prometheus' notation and names.
func promSeries(p scenario.Point, host string) string {
	name := promNames[p.Metric]
	if name == "" {
		panic("no Prometheus name for " + p.Metric)
	}
	keys := make([]string, 0, len(p.Attrs))
	for k := range p.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{fmt.Sprintf("%s=%q", nodeLabel, host)}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", strings.ReplaceAll(k, ".", "_"), p.Attrs[k]))
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}

// expand writes values in promtool's expanding notation: runs of a constant step as 'a+bxn'.
func expand(v []float64) string {
	var parts []string
	for i := 0; i < len(v); {
		j := i + 1
		var step float64
		if j < len(v) {
			step = v[j] - v[i]
			for j+1 < len(v) && sameStep(v[j+1]-v[j], step) {
				j++
			}
		} else {
			j = i
		}
		n := j - i
		parts = append(parts, fmt.Sprintf("%s+%sx%d", num(v[i]), num(step), n))
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// integral rounds a counter's every step to a whole count, so that promtool's expansion of
// 'a+bxn' is exact: a counter that stops moving must not seem to go back (a reset to irate).
func integral(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		if i == 0 {
			out[i] = math.Round(x)
			continue
		}
		out[i] = out[i-1] + math.Round(x-v[i-1])
	}
	return out
}

func sameStep(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func dedupe(xs []int) []int {
	sort.Ints(xs)
	var out []int
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
