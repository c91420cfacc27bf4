//go:build integration

package otelcoliclens_test

import (
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// The two-job node's hosts: the same recordings replayed with the owner receiver beside them and
// without it.
const (
	ownedHost = "twojob-owned"
	plainHost = "twojob-plain"
	// stacksHost replays them with the owner receiver too, the cpuuncore receiver at its default
	// granularity (an IIO stack's total, without a root port's address): the per-owner diagnosis
	// gives a stack the single owner of the GPUs and NICs behind it (nodestate stackOwners),
	// which the switch ports between them must not hide.
	stacksHost = "twojob-stacks"
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

// twoJobReceivers is the configuration of one host's replaying receivers: the simulator's
// two-job recordings (simulate.WriteTwoJob), played once (loop: false: after the last sample the
// counters hold their last values), the cpuuncore receiver per root port (pcie granularity port,
// so that a root port's bytes carry its address and join to the root port's owner) unless stacks.
func twoJobReceivers(dir, host string, interval time.Duration, stacks bool) string {
	var b strings.Builder
	for _, r := range []string{"rnic", "cpuuncore", "gpu"} {
		fmt.Fprintf(&b, "  %s/%s:\n    collection_interval: %s\n    initial_delay: 0s\n", r, host, interval)
		switch r {
		case "cpuuncore":
			if !stacks {
				b.WriteString("    pcie: {granularity: port}\n")
			}
		case "gpu":
			fmt.Fprintf(&b, "    dcgm: {sample_interval: %s}\n", interval)
		}
		fmt.Fprintf(&b, "    recording: {replay: %q, loop: false}\n", filepath.Join(dir, simulate.TwoJobCase, simulate.TwoJobNode+"-"+r+".jsonl"))
	}
	return b.String()
}

// twoJobPoints are one host's interconnect.io series as Prometheus stored them, by the
// simulator's series key (simulate.TwoJobSeries.Key): each stored point (ms, value) in order.
func twoJobPoints(t *testing.T, prom, host string) map[string][][2]float64 {
	t.Helper()
	out := map[string][][2]float64{}
	for _, s := range promSeriesSamples(t, prom, fmt.Sprintf(`interconnect_io_bytes_total{host_name=%q}[15m]`, host), time.Time{}) {
		k := simulate.TwoJobSeries{Component: s.labels["component"], Direction: s.labels["direction"], Device: s.labels["device"], BusID: s.labels["pci_bus_id"]}.Key()
		out[k] = s.points
	}
	return out
}

// firstPoint is the sample of a series' first stored point: the gpu receiver's first poll only
// opens its integrals and reports nothing, the rnic and cpuuncore receivers report from sample 0.
func firstPoint(component string) int {
	if component == "gpu_pcie" {
		return 1
	}
	return 0
}

// TestTwoJobsReplayedPerOwnerInPrometheus is issue #21's two-job node end to end: the simulator's
// recordings of one node shared by two jobs (simulate.WriteTwoJob: job 4711 healthy on gpu0-3 and
// mlx5_0 behind socket 0's root port, job 4712 bouncing through host memory on gpu4-7 and mlx5_1
// behind socket 1's, job 4713 taking 4712's devices at the switch), replayed by the built collector's
// rnic, cpuuncore and gpu receivers, once beside the real owner receiver (host A: the Slurm mapping
// directory simulate.WriteSlurmMapping writes, and the very PCI tree of the recordings as its
// root_path, simulate.WriteTwoJobRoot) and once without it (host B); the diagnosis connector
// (per_owner) and the generated rules in a real Prometheus (remote write) evaluate both.
//
// Counted in samples, never in wall-clock time (each stored point of a replayed series is one
// recorded sample, stamped on the replay's clock): every series' points are the simulator's model
// (simulate.TwoJobCounters); the README's join puts every byte of a job slot's GPUs, NIC, netdev
// and root port under the job the mapping gives it at that moment, the rest (the IIO parts of no
// root port) under shared and host memory under node, and no byte under no owner, before the
// switch and after the replay's end; the switch, written once the replay has reached sample 20,
// shows one interval after the first sample recorded after it; interconnect.io has the same
// series on both hosts; and each job's verdict holds in both evaluators (4711 healthy and never
// bouncing, 4712 and 4713 bouncing and never healthy), on host A and on host C, which replays the
// same with the cpuuncore receiver's stack totals (its default granularity), whose owners are the
// single owners of the GPUs and NICs behind each stack, the switch ports between them not counted.
func TestTwoJobsReplayedPerOwnerInPrometheus(t *testing.T) {
	t.Parallel() // replayed in real time and waited for in Prometheus: the clock, not the CPU (Makefile E2E_PARALLEL)
	bin := collectorBinary(t)
	const samples, switchAt = 40, 20
	interval := time.Second
	prom := startPrometheus(t, diagnosisRules(t, t.TempDir(), interval))
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.WriteTwoJob(simulate.Options{Dir: dir, Interval: interval, Samples: samples, UncoreFixture: fixture})
	require.NoError(t, err)
	root := filepath.Join(dir, "root")
	require.NoError(t, simulate.WriteTwoJobRoot(root))
	jobs := filepath.Join(dir, "jobs")
	require.NoError(t, simulate.WriteSlurmMapping(jobs, 0, switchAt))
	start := time.Now()
	logs := startCollector(t, bin, fmt.Sprintf(`
receivers:
%s%s  owner:
    collection_interval: 500ms
    refresh_interval: 250ms
    root_path: %s
    slurm: {enabled: true, mapping_dir: %s}
processors:
  resource/owned:
    attributes: [{key: host.name, value: %s, action: upsert}]
  resource/plain:
    attributes: [{key: host.name, value: %s, action: upsert}]
  resource/stacks:
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
    metrics/owned:
      receivers: [rnic/owned, cpuuncore/owned, gpu/owned, owner]
      processors: [resource/owned]
      exporters: [prometheus_remote_write, diagnosis]
    metrics/plain:
      receivers: [rnic/plain, cpuuncore/plain, gpu/plain]
      processors: [resource/plain]
      exporters: [prometheus_remote_write, diagnosis]
    metrics/stacks:
      receivers: [rnic/stacks, cpuuncore/stacks, gpu/stacks, owner]
      processors: [resource/stacks]
      exporters: [prometheus_remote_write, diagnosis]
    metrics/diagnosis: {receivers: [diagnosis], exporters: [prometheus_remote_write]}
  telemetry: {metrics: {level: none}}
`, twoJobReceivers(dir, "owned", interval, false), twoJobReceivers(dir, "plain", interval, false)+twoJobReceivers(dir, "stacks", interval, true),
		root, jobs, ownedHost, plainHost, stacksHost, prom))

	// Samples of the replay stored so far, by the points of slot 1's port on host A.
	slot1 := fmt.Sprintf(`interconnect_io_bytes_total{host_name=%q, component="rnic", device=%q, direction="transmit"}`, ownedHost, scenario.JobPort(1))
	stored := func(sel string) int {
		n := promQuery(t, prom, fmt.Sprintf(`min(count_over_time(%s[15m]))`, sel))
		if len(n) == 0 {
			return 0
		}
		return int(n[0].value)
	}
	ownerGPUs := func() map[string]float64 {
		out := map[string]float64{}
		for _, s := range promQuery(t, prom, fmt.Sprintf(`interconnect_owner{host_name=%q, component="gpu_pcie"} == 1`, ownedHost)) {
			out[s.labels["device"]+" "+s.labels["job_id"]] = 1
		}
		return out
	}
	wantGPUs := func(i int) map[string]float64 {
		out := map[string]float64{}
		for j := range 2 {
			for k := range scenario.JobGPUs {
				out[scenario.JobGPU(j, k)+" "+scenario.JobOwner(j, i, switchAt)] = 1
			}
		}
		return out
	}
	require.Equal(t, wantGPUs(0), waitFor(ownerGPUs, wantGPUs(0)), "the owner receiver reads the simulator's mapping directory (waited a minute)")

	// The prolog of 4713, once the replay has reached the switch's sample (stored points lag the
	// replay by the remote write's batching, so the switch falls at or after it: where it fell is
	// read back from the points' times below).
	require.Eventually(t, func() bool { return stored(slot1) >= switchAt }, 2*time.Minute, 100*time.Millisecond, "the replay did not reach sample %d", switchAt)
	require.NoError(t, simulate.WriteSlurmMapping(jobs, switchAt, switchAt))
	switched := time.Now()

	// The replays' end: every sample of both hosts is stored and the series hold their last
	// values (loop: false).
	ended := func() bool {
		for _, s := range promQuery(t, prom, `min by (host_name, component) (count_over_time(interconnect_io_bytes_total{host_name=~"twojob-(owned|plain)"}[15m]))`) {
			// The gpu receiver reports nothing after the last poll (a GPU gone quiet); the
			// others repeat their last values.
			want := samples + 2
			if s.labels["component"] == "gpu_pcie" {
				want = samples - firstPoint("gpu_pcie")
			}
			if int(s.value) < want {
				return false
			}
		}
		return stored(slot1) >= samples+2
	}
	if !assert.Eventually(t, ended, 2*time.Minute, 250*time.Millisecond, "the replays did not end") {
		for _, s := range promQuery(t, prom, `min by (host_name, component) (count_over_time(interconnect_io_bytes_total{host_name=~"twojob-.*"}[15m]))`) {
			t.Logf("stored points: %v %v", s.labels, s.value)
		}
		t.FailNow()
	}
	require.Equal(t, wantGPUs(samples-1), waitFor(ownerGPUs, wantGPUs(samples-1)), "after the switch the owner receiver has the new owners (waited a minute)")
	end := time.Now()
	t.Logf("replays of %d samples ended after %s", samples, end.Sub(start).Round(time.Millisecond))

	// Every series is the model's, sample by sample, on both hosts.
	model := simulate.TwoJobCounters(samples, interval.Seconds())
	series := map[string]simulate.TwoJobSeries{}
	for s := range model[0] {
		series[s.Key()] = s
	}
	points := map[string]map[string][][2]float64{ownedHost: twoJobPoints(t, prom, ownedHost), plainHost: twoJobPoints(t, prom, plainHost)}
	for host, byKey := range points {
		for key, s := range series {
			pts := byKey[key]
			off := firstPoint(s.Component)
			require.GreaterOrEqual(t, len(pts), samples-off, "%s: %s has too few points", host, key)
			for p := range samples - off {
				want := model[p+off][s]
				require.InDelta(t, want, pts[p][1], 1e-9*want+512+64*float64(p), "%s: %s at sample %d", host, key, p+off)
			}
		}
		for key, pts := range byKey {
			if _, ok := series[key]; !ok {
				assert.Zero(t, pts[len(pts)-1][1], "%s: %s carries nothing in the model", host, key)
			}
		}
	}
	owned := points[ownedHost]
	assert.Equal(t, len(owned), len(points[plainHost]), "interconnect.io has the same series with attribution on and off")
	for key := range owned {
		assert.Contains(t, points[plainHost], key, "a series of host A is on host B")
	}

	// The sample each series is at, at time ms (its newest point then), and the model's bytes per
	// owner at that moment: the series' counters under the owner the model gives its device then.
	sampleAt := func(key string, ms float64) int {
		n := sort.Search(len(owned[key]), func(i int) bool { return owned[key][i][0] > ms })
		return min(n-1+firstPoint(series[key].Component), samples-1)
	}
	expected := func(ms float64, ownerSample int) map[string]float64 {
		out := map[string]float64{}
		for key, s := range series {
			if i := sampleAt(key, ms); i >= 0 {
				out[simulate.TwoJobOwner(s, ownerSample, switchAt)] += model[i][s]
			}
		}
		return out
	}
	// The README's join at ms, and what no owner series names ("none").
	joined := func(ms float64) map[string]float64 {
		at := time.UnixMilli(int64(ms))
		out := map[string]float64{}
		q := fmt.Sprintf(`sum by (owner_kind, job_id) (interconnect_io_bytes_total{host_name=%q}
  * on (host_name, component, pci_bus_id) group_left (owner_kind, job_id) (interconnect_owner == 1))`, ownedHost)
		for _, s := range promAPIQuery(t, prom, q, at) {
			k := s.Metric["owner_kind"]
			if k == "job" {
				k += " " + s.Metric["job_id"]
			}
			v, err := strconv.ParseFloat(s.Value[1].(string), 64)
			require.NoError(t, err)
			out[k] = v
		}
		total := promAPIQuery(t, prom, fmt.Sprintf(`sum(interconnect_io_bytes_total{host_name=%q})`, ownedHost), at)
		require.Len(t, total, 1)
		all, err := strconv.ParseFloat(total[0].Value[1].(string), 64)
		require.NoError(t, err)
		for _, v := range out {
			all -= v
		}
		out["none"] = all
		return out
	}
	check := func(what string, ms float64, ownerSample int) map[string]float64 {
		want, got := expected(ms, ownerSample), joined(ms)
		for k, v := range want {
			assert.InDelta(t, v, got[k], 1e-9*v+1e4, "%s: bytes of %s (every owned byte under its owner, the rest shared or node)", what, k)
		}
		assert.InDelta(t, 0, got["none"], 1, "%s: every byte of the two-job node has an owner, shared or node", what)
		assert.Empty(t, promAPIQuery(t, prom, fmt.Sprintf(`interconnect_io_bytes_total{host_name=%q}
  unless on (host_name, component, pci_bus_id) (interconnect_owner == 1)`, ownedHost), time.UnixMilli(int64(ms))), "%s: no series without an owner", what)
		delete(got, "none")
		owners := maps.Clone(got)
		delete(owners, "shared") // the IIO parts of no root port: 0 bytes, but shared
		delete(want, "shared")
		assert.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(owners)), "%s: the owners", what)
		return got
	}

	// The switch in samples: the first sample of slot 1's port stored at or after the prolog ran,
	// the join before it (the newest point before), and one interval after it.
	port := owned[simulate.TwoJobSeries{Component: "rnic", Direction: "transmit", Device: scenario.JobPort(1), BusID: simulate.TwoJobNICBus(1)}.Key()]
	s := sort.Search(len(port), func(i int) bool { return port[i][0] >= float64(switched.UnixMilli()) })
	require.Less(t, s+1, samples, "the switch fell after the replay (at stored sample %d)", s)
	t.Logf("the prolog of %s ran at stored sample %d of slot 1's port (the replay reached %d first)", scenario.JobC, s, switchAt)
	before := check(fmt.Sprintf("sample %d, before the switch", s-1), port[s-1][0], switchAt-1)
	after := check(fmt.Sprintf("sample %d, one interval after the switch", s+1), port[s+1][0], switchAt)
	final := check("after the replay's end", float64(end.UnixMilli()), samples-1)
	t.Logf("bytes per owner (README join): sample %d %v; sample %d %v; end %v", s-1, before, s+1, after, final)
	assert.Contains(t, before, "job "+scenario.JobB)
	assert.NotContains(t, before, "job "+scenario.JobC)
	assert.Contains(t, after, "job "+scenario.JobC, "the new job owns its devices' bytes one interval after the switch")
	assert.NotContains(t, after, "job "+scenario.JobB, "the ended job owns no byte one interval after the switch")

	counts := map[string]float64{}
	for _, s := range promQuery(t, prom, `count by (host_name) (interconnect_io_bytes_total{host_name=~"twojob-(owned|plain)"})`) {
		counts[s.labels["host_name"]] = s.value
	}
	t.Logf("interconnect.io series per host: %v (%d of them carry the model's traffic)", counts, len(series))
	assert.Equal(t, map[string]float64{ownedHost: float64(len(owned)), plainHost: float64(len(owned))}, counts, "interconnect.io has the same series with attribution on and off")
	assert.Empty(t, promQuery(t, prom, `interconnect_io_bytes_total{job_id!=""}`), "no owner label on interconnect.io")

	// Both evaluators, over the whole run: each job's verdict, and never the other one, with the
	// root ports' bytes by address and as the stacks' totals.
	run := fmt.Sprintf("[%ds]", int(time.Since(start).Seconds())+5)
	for _, host := range []string{ownedHost, stacksHost} {
		held := func(metric, sel string) map[string]float64 {
			out := map[string]float64{}
			for _, s := range promQuery(t, prom, fmt.Sprintf(`max by (job_id) (max_over_time(%s{host_name=%q, %s}%s))`, metric, host, sel, run)) {
				out[s.labels["job_id"]] = s.value
			}
			return out
		}
		jobSel := fmt.Sprintf(`job_id=~"%s|%s|%s"`, scenario.JobA, scenario.JobB, scenario.JobC)
		assert.Equal(t, map[string]float64{scenario.JobA: 0, scenario.JobB: 1, scenario.JobC: 1},
			held("diagnosis_verdict_ratio", `verdict="gpudirect_bounce", device="", `+jobSel), "%s: connector: the bouncing jobs' verdict, per job", host)
		assert.Equal(t, map[string]float64{scenario.JobA: 1, scenario.JobB: 0, scenario.JobC: 0},
			held("diagnosis_verdict_ratio", `verdict="healthy_gpudirect", device="", `+jobSel), "%s: connector: the healthy job's verdict, per job", host)
		assert.Equal(t, map[string]float64{scenario.JobB: 1, scenario.JobC: 1},
			held("ALERTS", `alertname="IclensDiagnosisOwnerGPUDirectBounce", alertstate="firing"`), "%s: rules: the bouncing jobs fire, the healthy one does not", host)
		assert.Equal(t, map[string]float64{scenario.JobA: 1},
			held("ALERTS", `alertname="IclensDiagnosisOwnerHealthyGPUDirect", alertstate="firing"`), "%s: rules: only the healthy job is healthy", host)
	}
	assert.Empty(t, promQuery(t, prom, fmt.Sprintf(`diagnosis_verdict_ratio{host_name=%q, job_id!=""}`, plainHost)), "no owner verdicts without owners")
	assert.NotContains(t, logs.String(), "\terror\t")
}
