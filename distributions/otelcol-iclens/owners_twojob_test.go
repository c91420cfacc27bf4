//go:build integration

package otelcoliclens_test

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// The two-job node's hosts: the same stream with the owner receiver's series and without.
const (
	ownedHost = "twojob-owned"
	plainHost = "twojob-plain"
	// receiverHost is the real owner receiver reading the simulator's Slurm mapping directory
	// (simulate.WriteSlurmMapping) on the DGX H100 stand-in.
	receiverHost = "twojob-receiver"
)

// twoJobUnits are the units the receivers give the stream's metrics whose unit adds a suffix in
// Prometheus (receiver/*/metadata.yaml), so that the names are the rules' (interconnect_io_bytes_total).
var twoJobUnits = map[string]string{"interconnect.io": "By", "rnic.port.rate": "By/s", "rnic.pfc.pause_duration": "us"}

// scenarioCase is the simulated case named name.
func scenarioCase(t *testing.T, name string) scenario.Case {
	t.Helper()
	c, ok := scenario.Named(name)
	require.True(t, ok, "no simulated case %s", name)
	return c
}

// dialable reports whether something listens on addr.
func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func twoJobMetrics(host string, pts []scenario.Point, at time.Time, owners bool) pmetric.Metrics {
	var keep []scenario.Point
	for _, p := range pts {
		if owners || p.Metric != "interconnect.owner" {
			keep = append(keep, p)
		}
	}
	md := scenario.Metrics(host, "two_jobs", keep, at)
	ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		if u, ok := twoJobUnits[ms.At(i).Name()]; ok {
			ms.At(i).SetUnit(u)
		}
	}
	return md
}

// expectedByOwner is the README's join computed from the stream itself at one sample: each
// interconnect.io counter under the owner whose interconnect.owner series (component,
// pci.bus_id) holds 1 at that sample, by "job <id>", "shared" or "node"; the counters no owner
// series names under "none".
func expectedByOwner(pts []scenario.Point) map[string]float64 {
	owner := map[[2]string]string{}
	for _, p := range pts {
		if p.Metric == "interconnect.owner" && p.Value == 1 {
			o := p.Attrs["owner.kind"]
			if o == "job" {
				o += " " + p.Attrs["job.id"]
			}
			owner[[2]string{p.Attrs["component"], p.Attrs["pci.bus_id"]}] = o
		}
	}
	out := map[string]float64{}
	for _, p := range pts {
		if p.Metric != "interconnect.io" {
			continue
		}
		o, ok := owner[[2]string{p.Attrs["component"], p.Attrs["pci.bus_id"]}]
		if !ok {
			o = "none"
		}
		out[o] += math.Trunc(p.Value) // scenario.Metrics sends counters as integers
	}
	return out
}

// TestTwoJobsPerOwnerInPrometheus sends the built collector, over OTLP, the two-job node of
// internal/scenario (TwoJobStream: job 4711 healthy on gpu0-3 and mlx5_0, job 4712 bouncing through
// host memory on gpu4-7 and mlx5_1, job 4713 taking 4712's devices at sample 20), one sample a
// second stamped with the sample's own time, with the owner receiver's series and, as a second
// host, without; beside it the real owner receiver reads the simulator's Slurm mapping directory
// for the same samples (simulate.WriteSlurmMapping, on the DGX H100 stand-in) and must name the
// stream's owners of gpu0-7 before and after the switch. The diagnosis connector (per_owner) and the generated rules in a real Prometheus
// (remote write) evaluate it. Checked, at the samples' own timestamps where the check is about
// bytes: every owned byte under its job and the rest under shared or node, the switch in the very
// sample that carries it, interconnect.io's series the same with attribution on and off, and each
// job's verdict in both evaluators (4711 healthy and never bouncing, 4712 and 4713 bouncing and
// never healthy).
func TestTwoJobsPerOwnerInPrometheus(t *testing.T) {
	bin := collectorBinary(t)
	const samples, switchAt = 40, 20
	interval := time.Second
	prom := startPrometheus(t, diagnosisRules(t, t.TempDir(), interval))
	otlp := freeAddr(t)
	root := ownertest.WriteDGXNode(t)
	jobs := filepath.Join(t.TempDir(), "jobs")
	require.NoError(t, simulate.WriteSlurmMapping(jobs, 0, switchAt))
	logs := startCollector(t, bin, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http: {endpoint: %s}
  owner:
    collection_interval: 500ms
    refresh_interval: 250ms
    root_path: %s
    slurm: {enabled: true, mapping_dir: %s}
processors:
  resource:
    attributes: [{key: host.name, value: %s, action: upsert}]
connectors:
  diagnosis:
    interval: 1s
    window: 3s
    per_owner: true
exporters:
  prometheus_remote_write:
    endpoint: http://%s/api/v1/write
    resource_to_telemetry_conversion: {enabled: true}
service:
  pipelines:
    metrics: {receivers: [otlp], exporters: [prometheus_remote_write, diagnosis]}
    metrics/diagnosis: {receivers: [diagnosis], exporters: [prometheus_remote_write]}
    metrics/owner: {receivers: [owner], processors: [resource], exporters: [prometheus_remote_write]}
  telemetry: {metrics: {level: none}}
`, otlp, root, jobs, receiverHost, prom))
	require.Eventually(t, func() bool { return dialable(otlp) }, 30*time.Second, 100*time.Millisecond, "the collector's OTLP receiver did not listen")

	// The owner receiver's GPU owners, by its device name (gpu<index>, as the stream names them).
	receiverGPUs := func() map[string]float64 {
		out := map[string]float64{}
		for _, s := range promQuery(t, prom, fmt.Sprintf(`interconnect_owner{host_name=%q, component="gpu_pcie"} == 1`, receiverHost)) {
			out[s.labels["device"]+" "+s.labels["job_id"]] = 1
		}
		return out
	}
	streamGPUs := func(pts []scenario.Point) map[string]float64 {
		out := map[string]float64{}
		for _, p := range pts {
			if p.Metric == "interconnect.owner" && p.Attrs["component"] == "gpu_pcie" && p.Value == 1 {
				out[p.Attrs["device"]+" "+p.Attrs["job.id"]] = 1
			}
		}
		return out
	}

	stream := scenario.TwoJobStream(scenarioCase(t, "healthy_allreduce"), scenarioCase(t, "gdr_bounce"), samples, interval.Seconds(), switchAt)
	want := streamGPUs(stream[0])
	require.Equal(t, want, waitFor(receiverGPUs, want), "the owner receiver reads the simulator's mapping directory as the stream's owners (waited a minute)")
	start := time.Now().Truncate(time.Second).Add(time.Second)
	stamp := func(i int) time.Time { return start.Add(time.Duration(i) * interval) }
	var marshal pmetric.JSONMarshaler
	for i, pts := range stream {
		time.Sleep(time.Until(stamp(i)))
		if i == switchAt {
			require.NoError(t, simulate.WriteSlurmMapping(jobs, i, switchAt)) // the prolog of 4713
		}
		md := twoJobMetrics(ownedHost, pts, stamp(i), true)
		twoJobMetrics(plainHost, pts, stamp(i), false).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
		body, err := marshal.MarshalMetrics(md)
		require.NoError(t, err)
		postOTLP(t, otlp, "/v1/metrics", body)
	}
	last := stamp(samples - 1)
	require.Eventually(t, func() bool {
		return len(promAPIQuery(t, prom, fmt.Sprintf(`timestamp(interconnect_io_bytes_total{host_name=%q}) >= %d`, plainHost, last.Unix()), last)) > 0
	}, time.Minute, 250*time.Millisecond, "the last sample did not reach Prometheus (waited a minute for remote write)")

	want = streamGPUs(stream[samples-1])
	require.Equal(t, want, waitFor(receiverGPUs, want), "after the switch the owner receiver has the stream's new owners (waited a minute)")

	// Bytes per owner at a sample, by the README's join, at that sample's own timestamp.
	joined := func(i int) map[string]float64 {
		out := map[string]float64{}
		q := fmt.Sprintf(`sum by (owner_kind, job_id) (interconnect_io_bytes_total{host_name=%q}
  * on (host_name, component, pci_bus_id) group_left (owner_kind, job_id) (interconnect_owner == 1))`, ownedHost)
		for _, s := range promAPIQuery(t, prom, q, stamp(i)) {
			k := s.Metric["owner_kind"]
			if k == "job" {
				k += " " + s.Metric["job_id"]
			}
			var v float64
			_, err := fmt.Sscan(s.Value[1].(string), &v)
			require.NoError(t, err)
			out[k] = v
		}
		total := promAPIQuery(t, prom, fmt.Sprintf(`sum(interconnect_io_bytes_total{host_name=%q})`, ownedHost), stamp(i))
		require.Len(t, total, 1)
		var all float64
		_, err := fmt.Sscan(total[0].Value[1].(string), &all)
		require.NoError(t, err)
		for _, v := range out {
			all -= v
		}
		if all != 0 {
			out["none"] = all
		}
		return out
	}
	for _, i := range []int{switchAt - 1, switchAt, samples - 1} {
		want := expectedByOwner(stream[i])
		got := joined(i)
		require.Len(t, got, len(want), "sample %d: owners %v, want %v", i, got, want)
		for k, v := range want {
			assert.InDelta(t, v, got[k], 1e-9*v+0.5, "sample %d: bytes of %s (every owned byte under its owner, the rest shared or node)", i, k)
		}
		assert.NotContains(t, want, "none", "sample %d: every byte of the two-job node has an owner, shared or node", i)
	}
	t.Logf("bytes per owner (README join) at samples %d, %d: %v; %v", switchAt-1, switchAt, joined(switchAt-1), joined(switchAt))
	assert.NotContains(t, joined(switchAt), "job "+scenario.JobB, "the ended job owns no byte from the switch's sample on")
	assert.Contains(t, joined(switchAt), "job "+scenario.JobC, "the new job owns its devices' bytes from the switch's sample on")
	assert.Contains(t, joined(switchAt-1), "job "+scenario.JobB)

	series := map[string]float64{}
	for _, s := range promQuery(t, prom, `count by (host_name) (interconnect_io_bytes_total{host_name=~"twojob-.*"})`) {
		series[s.labels["host_name"]] = s.value
	}
	var ioSeries float64
	for _, p := range stream[0] {
		if p.Metric == "interconnect.io" {
			ioSeries++
		}
	}
	t.Logf("interconnect.io series per host: %v", series)
	assert.Equal(t, map[string]float64{ownedHost: ioSeries, plainHost: ioSeries}, series, "interconnect.io has the same series with attribution on and off")
	assert.Empty(t, promQuery(t, prom, `interconnect_io_bytes_total{job_id!=""}`), "no owner label on interconnect.io")

	// Both evaluators, over the whole run: each job's verdict, and never the other one.
	run := fmt.Sprintf("[%ds]", int(time.Since(start).Seconds())+5)
	held := func(metric, sel string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range promQuery(t, prom, fmt.Sprintf(`max by (job_id) (max_over_time(%s{host_name=%q, %s}%s))`, metric, ownedHost, sel, run)) {
			out[s.labels["job_id"]] = s.value
		}
		return out
	}
	jobSel := fmt.Sprintf(`job_id=~"%s|%s|%s"`, scenario.JobA, scenario.JobB, scenario.JobC)
	assert.Equal(t, map[string]float64{scenario.JobA: 0, scenario.JobB: 1, scenario.JobC: 1},
		held("diagnosis_verdict_ratio", `verdict="gpudirect_bounce", device="", `+jobSel), "connector: the bouncing jobs' verdict, per job")
	assert.Equal(t, map[string]float64{scenario.JobA: 1, scenario.JobB: 0, scenario.JobC: 0},
		held("diagnosis_verdict_ratio", `verdict="healthy_gpudirect", device="", `+jobSel), "connector: the healthy job's verdict, per job")
	assert.Equal(t, map[string]float64{scenario.JobB: 1, scenario.JobC: 1},
		held("ALERTS", `alertname="IclensDiagnosisOwnerGPUDirectBounce", alertstate="firing"`), "rules: the bouncing jobs fire, the healthy one does not")
	assert.Equal(t, map[string]float64{scenario.JobA: 1},
		held("ALERTS", `alertname="IclensDiagnosisOwnerHealthyGPUDirect", alertstate="firing"`), "rules: only the healthy job is healthy")
	assert.Empty(t, promQuery(t, prom, fmt.Sprintf(`diagnosis_verdict_ratio{host_name=%q, job_id!=""}`, plainHost)), "no owner verdicts without owners")
	assert.NotContains(t, logs.String(), "\terror\t")
}
