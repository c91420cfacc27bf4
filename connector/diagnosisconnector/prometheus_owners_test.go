package diagnosisconnector

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// TestPromtoolPerOwnerRules: the generated per-owner rules, in promtool, on the two-job node
// (scenario.TwoJobSteadyStream at the default 10 s interval): job 4711's healthy alert and job
// 4712's bounce alert fire together on one node, nothing else per owner; at the switch 4712's
// alerts end and 4713's bounce fires one interval after its first sample (hold 2), as the
// connector's per_owner does (TestPerOwnerVerdicts).
func TestPromtoolPerOwnerRules(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	const samples, switchAt, host = 40, 20, "node1"
	interval := cfg.Interval
	stream := scenario.TwoJobSteadyStream(caseNamed(t, "healthy_allreduce"), caseNamed(t, "gdr_bounce"), samples, interval.Seconds(), switchAt)

	// Every series' value per sample, "_" where a sample has none (the ended job's owner series
	// after its one 0, the new job's before it started).
	values := map[string][]string{}
	counters := map[string][]float64{}
	var keys []string
	for i, pts := range stream {
		for _, p := range pts {
			k := promSeries(p, host)
			if _, ok := values[k]; !ok {
				keys = append(keys, k)
				values[k] = make([]string, samples)
				for j := range values[k] {
					values[k][j] = "_"
				}
			}
			values[k][i] = num(p.Value)
			if p.Counter {
				counters[k] = append(counters[k], p.Value)
			}
		}
	}
	pt := promtoolTest{Name: "two_jobs", Interval: promDuration(interval)}
	for _, k := range keys {
		v := strings.Join(values[k], " ")
		if c, ok := counters[k]; ok {
			v = expand(integral(c))
		}
		pt.InputSeries = append(pt.InputSeries, inputSeries{Series: k, Values: v})
	}
	summary := map[string]string{}
	for _, r := range rules.Groups[0].Rules {
		if strings.HasPrefix(r.Alert, "IclensDiagnosisOwner") {
			summary[r.Alert] = r.Annotations["summary"]
		}
	}
	require.Len(t, summary, len(verdict.NodeVerdicts()), "one owner alert per node-level verdict")
	expect := func(at int, fire map[string][]string) {
		for _, v := range verdict.NodeVerdicts() {
			name := ownerAlertName(alertName(v))
			art := alertRuleTest{EvalTime: promDuration(time.Duration(at) * interval), Alertname: name, ExpAlerts: []expAlert{}}
			for _, job := range fire[v] {
				labels := map[string]string{nodeLabel: host, "verdict": v, "severity": rulesSeverity(rules, name), "owner_kind": "job", "job_id": job}
				s := strings.Replace(summary[name], "{{ $labels.host_name }} {{ $labels.owner_kind }} {{ if $labels.job_id }}{{ $labels.job_id }}{{ else }}{{ $labels.k8s_namespace_name }}/{{ $labels.k8s_pod_name }}{{ end }}:", host+" job "+job+":", 1)
				art.ExpAlerts = append(art.ExpAlerts, expAlert{ExpLabels: labels, ExpAnnotations: map[string]string{
					"summary": s, "description": "connector/diagnosisconnector/README.md#per-owner-verdicts"}})
			}
			pt.AlertRuleTest = append(pt.AlertRuleTest, art)
		}
	}
	before := map[string][]string{verdict.HealthyGPUDirect: {scenario.JobA}, verdict.GPUDirectBounce: {scenario.JobB}}
	after := map[string][]string{verdict.HealthyGPUDirect: {scenario.JobA}, verdict.GPUDirectBounce: {scenario.JobC}}
	expect(cfg.Hold+1, before)
	expect(switchAt-1, before)
	// The switch's sample: the condition holds for 4713 (pending), 4712 has no owned bytes.
	expect(switchAt, map[string][]string{verdict.HealthyGPUDirect: {scenario.JobA}})
	expect(switchAt+cfg.Hold-1, after)
	expect(samples-1, after)

	assert.Contains(t, runPromtoolTest(t, bin, interval, rules, pt), "SUCCESS")
}

// TestOwnerRulesReadTheOwnerSeries: the per-owner rules join on the owner receiver's series by the
// labels the README's join uses, and every node-level verdict has its owner alert.
func TestOwnerRulesReadTheOwnerSeries(t *testing.T) {
	rules := PrometheusRules(createDefaultConfig()).Groups[0].Rules
	var alerts []string
	var joined bool
	for _, r := range rules {
		if strings.HasPrefix(r.Alert, "IclensDiagnosisOwner") {
			alerts = append(alerts, r.Labels["verdict"])
		}
		joined = joined || r.Record == recOwnedDevice && strings.Contains(r.Expr, promNames[nodestate.MetricOwner])
	}
	assert.ElementsMatch(t, verdict.NodeVerdicts(), alerts)
	assert.True(t, joined)
}
