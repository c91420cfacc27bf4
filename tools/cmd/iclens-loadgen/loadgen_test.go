package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// series counts a scrape's data points per metric name.
func series(md pmetric.Metrics) map[string]int {
	out := map[string]int{}
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					out[m.Name()] += m.Sum().DataPoints().Len()
				case pmetric.MetricTypeGauge:
					out[m.Name()] += m.Gauge().DataPoints().Len()
				}
			}
		}
	}
	return out
}

// TestFleet: every node is its own host.name with the simulator's series, every fault-every-th
// node's traffic changes at fault-at (its RDMA bytes stop growing as fast), and a node's owner
// series name its job.
func TestFleet(t *testing.T) {
	fl, err := newFleet(32, 16, 8, 10, 5, 10*time.Second)
	require.NoError(t, err)
	assert.False(t, fl.isFaulty(0))
	assert.True(t, fl.isFaulty(15))
	assert.True(t, fl.isFaulty(31))
	md := fl.metrics(15, 0, time.Unix(1_800_000_000, 0))
	host, ok := md.ResourceMetrics().At(0).Resource().Attributes().Get("host.name")
	require.True(t, ok)
	assert.Equal(t, "node0015", host.Str())
	s := series(md)
	assert.Equal(t, 2, s["interconnect.owner"], "the GPU and the RDMA port are the job's")
	assert.Greater(t, s["interconnect.io"], 10)

	owner := func(md pmetric.Metrics) string {
		m := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for k := range m.Len() {
			if m.At(k).Name() == "interconnect.owner" {
				v, _ := m.At(k).Gauge().DataPoints().At(0).Attributes().Get("job.id")
				return v.Str()
			}
		}
		return ""
	}
	assert.Equal(t, "1001", owner(fl.metrics(15, 0, time.Now())), "nodes 8-15 are job 1001")
	assert.Equal(t, "1000", owner(fl.metrics(7, 0, time.Now())))
	// Jobs of 8: nodes 15 and 31 fall back, in jobs 1001 and 1003; their 7 peers each wait.
	assert.Equal(t, 14, fl.waiters())

	// RDMA bytes sent per interval: the same before the fault on both nodes (within the model's ripple), far less after it on
	// the faulty one (TCP fallback), unchanged on the healthy one.
	rdma := func(node, k int) float64 {
		var v float64
		m := fl.metrics(node, k, time.Now()).ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range m.Len() {
			if m.At(i).Name() != "interconnect.io" {
				continue
			}
			dps := m.At(i).Sum().DataPoints()
			for j := range dps.Len() {
				c, _ := dps.At(j).Attributes().Get("component")
				d, _ := dps.At(j).Attributes().Get("direction")
				if c.Str() == "rnic" && d.Str() == "transmit" {
					v += float64(dps.At(j).IntValue())
				}
			}
		}
		return v
	}
	before := rdma(15, 4) - rdma(15, 3)
	assert.InDelta(t, rdma(0, 4)-rdma(0, 3), before, before*0.25)
	assert.Less(t, rdma(15, 8)-rdma(15, 7), before/10, "the faulty node's RDMA traffic collapses")
	assert.InDelta(t, before, rdma(0, 8)-rdma(0, 7), before*0.25)
}

func TestReadProcSelf(t *testing.T) {
	s, err := readProc(os.Getpid())
	require.NoError(t, err)
	assert.True(t, s.hasTicks)
	assert.Positive(t, s.rssKiB)
	assert.GreaterOrEqual(t, s.peakKiB, s.rssKiB)
}

// TestEvictionsSaid reads the nodestate.Evictions warning as the collector's console log writes it.
func TestEvictionsSaid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway.log")
	log := "2026-12-02T02:00:00.000Z\twarn\tnodestate/evictions.go:33\tmore nodes than max_nodes: the least recently seen are forgotten; raise max_nodes to keep them\t" +
		`{"max_nodes": 1024, "evicted": 1, "evicted_total": 1, "last_evicted": "node0001"}` + "\n" +
		"2026-12-02T02:01:00.000Z\twarn\tnodestate/evictions.go:33\tmore nodes than max_nodes: the least recently seen are forgotten; raise max_nodes to keep them\t" +
		`{"max_nodes": 1024, "evicted": 2047, "evicted_total": 2048, "last_evicted": "node0007"}` + "\n" +
		"2026-12-02T02:01:00.000Z\tinfo\tservice.go:1\tEverything is ready.\n"
	require.NoError(t, os.WriteFile(path, []byte(log), 0o644))
	assert.Contains(t, evictionsSaid(path), "2 eviction warnings (Warn), 2048 nodes evicted in all")

	require.NoError(t, os.WriteFile(path, []byte("x\tinfo\ty\tmore nodes than max_nodes: ...\n"), 0o644))
	assert.Contains(t, evictionsSaid(path), "at another level than Warn")
}

// TestLatencies: a node's time is from its first faulty sample to the first poll that showed its
// verdict; a verdict seen before the fault was sent does not count.
func TestLatencies(t *testing.T) {
	fl, err := newFleet(32, 16, 0, 10, 5, time.Second)
	require.NoError(t, err)
	w := newVerdictWatch("", fl)
	t0 := time.Unix(1_800_000_000, 0)
	w.named["node0015"] = t0.Add(2500 * time.Millisecond)
	w.named["node0031"] = t0.Add(-time.Second)
	got := w.latencies(map[int]time.Time{15: t0, 31: t0})
	assert.Equal(t, []float64{2.5}, got)
	assert.Equal(t, 1, w.detected(map[int]time.Time{15: t0, 31: t0}))
}
