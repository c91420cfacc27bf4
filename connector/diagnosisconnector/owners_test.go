package diagnosisconnector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

const (
	twoJobSamples = 40
	twoJobSwitch  = 20
)

// runTwoJobs feeds the two-job node (scenario.TwoJobStream: job 4711 healthy on gpu0-3 and
// mlx5_0, job 4712 bouncing through host memory on gpu4-7 and mlx5_1, job 4713 taking them over at
// sample twoJobSwitch) sample by sample and returns, per sample, the verdicts that hold as
// "verdict@device#job" ("#" alone for the node's own), and the logs.
func runTwoJobs(t *testing.T, cfg *Config) ([][]string, []plog.Logs) {
	t.Helper()
	e := newTestEngine(t, cfg)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	stream := scenario.TwoJobStream(caseNamed(t, "healthy_allreduce"), caseNamed(t, "gdr_bounce"), twoJobSamples, cfg.Interval.Seconds(), twoJobSwitch)
	var out [][]string
	var logs []plog.Logs
	for i, pts := range stream {
		at := start.Add(time.Duration(i) * cfg.Interval)
		e.ingest(toMetrics("node1", "two_jobs", pts, at), at)
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		out = append(out, holdingByOwner(t, md))
		logs = append(logs, ld)
	}
	return out, logs
}

func holdingByOwner(t *testing.T, md pmetric.Metrics) []string {
	t.Helper()
	var out []string
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		ms := rms.At(i).ScopeMetrics().At(0).Metrics()
		for j := range ms.Len() {
			if ms.At(j).Name() != verdict.MetricVerdict {
				continue
			}
			dps := ms.At(j).Gauge().DataPoints()
			for k := range dps.Len() {
				a := dps.At(k).Attributes()
				get := func(key string) string {
					v, ok := a.Get(key)
					require.True(t, ok, "every verdict point carries %s", key)
					return v.AsString()
				}
				kind, job := get(verdict.AttrOwnerKind), get(verdict.AttrJobID)
				if kind != "" {
					assert.Equal(t, "job", kind)
				}
				if dps.At(k).IntValue() == 1 {
					out = append(out, fmt.Sprintf("%s@%s#%s", get(verdict.AttrVerdict), get(verdict.AttrDevice), job))
				}
			}
		}
	}
	return out
}

// TestPerOwnerVerdicts: on one node, job 4711's GPUDirect traffic is healthy while job 4712's
// bounces through host memory, and each is named so; the GPUs that cannot do GPUDirect RDMA carry
// their job. When 4712 ends and 4713 takes its devices (the owner receiver's series switch in one
// sample), 4712's verdicts end at that sample, the device verdicts carry 4713 from it, and 4713's
// own verdict is raised after hold evaluations, counted in samples.
func TestPerOwnerVerdicts(t *testing.T) {
	cfg := testConfig()
	cfg.PerOwner = true
	got, logs := runTwoJobs(t, cfg)
	// The gpu receiver's first rate needs three samples, then hold evaluations.
	settled := 3 + cfg.Hold
	for i := settled; i < twoJobSamples; i++ {
		second := scenario.JobB
		if i >= twoJobSwitch {
			second = scenario.JobC
		}
		assert.Contains(t, got[i], verdict.HealthyGPUDirect+"@#"+scenario.JobA, "sample %d", i)
		assert.NotContains(t, got[i], verdict.GPUDirectBounce+"@#"+scenario.JobA, "sample %d", i)
		for k := range scenario.JobGPUs {
			assert.Contains(t, got[i], verdict.GPUDirectNotReady+"@"+scenario.JobGPU(1, k)+"#"+second, "sample %d", i)
			assert.NotContains(t, got[i], verdict.GPUDirectNotReady+"@"+scenario.JobGPU(0, k)+"#"+scenario.JobA, "sample %d", i)
		}
		if i < twoJobSwitch || i >= twoJobSwitch+cfg.Hold-1 {
			assert.Contains(t, got[i], verdict.GPUDirectBounce+"@#"+second, "sample %d", i)
			assert.NotContains(t, got[i], verdict.HealthyGPUDirect+"@#"+second, "sample %d", i)
		}
		if i >= twoJobSwitch {
			for _, v := range got[i] {
				assert.False(t, strings.HasSuffix(v, "#"+scenario.JobB), "sample %d: %s holds for the ended job", i, v)
			}
		}
	}
	// One record when each job's verdict was first raised, one when 4713's was.
	var bodies []string
	for _, lr := range records(logs) {
		if job, ok := lr.Attributes().Get(verdict.AttrJobID); ok && job.Str() != "" {
			bodies = append(bodies, lr.Body().Str())
		}
	}
	require.Len(t, bodies, 3, "%q", bodies)
	assert.Contains(t, strings.Join(bodies, "\n"), "node1: job 4712: GPUDirect RDMA bounces through host memory")
	assert.Contains(t, strings.Join(bodies, "\n"), "on the same node job 4711: healthy gpudirect")
	assert.True(t, strings.HasPrefix(bodies[2], "node1: job 4713: GPUDirect RDMA bounces"), bodies[2])
}

// TestPerOwnerOff: without per_owner no point carries an owner, whatever the owner receiver
// sends: the verdicts are the node's alone, as before owners existed.
func TestPerOwnerOff(t *testing.T) {
	got, _ := runTwoJobs(t, testConfig())
	for i, vs := range got {
		for _, v := range vs {
			assert.True(t, strings.HasSuffix(v, "#"), "sample %d: %s", i, v)
		}
	}
	assert.Contains(t, got[twoJobSamples-1], verdict.GPUDirectNotReady+"@"+scenario.JobGPU(1, 0)+"#")
}
