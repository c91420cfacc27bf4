package lensviewexporter

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

const twoJobHost = "twojob"

// twoJobView feeds the two-job node (scenario.TwoJobStream: job 4711 healthy on gpu0-3 and
// mlx5_0, job 4712 bouncing through host memory on gpu4-7 and mlx5_1, no switch) to a store, the
// receivers' metrics and what the real diagnosis connector made of them with per_owner, and
// returns the store and the connector's output.
func twoJobView(t *testing.T) (*testStore, []pmetric.Metrics, []plog.Logs) {
	t.Helper()
	const samples = 12
	stream := scenario.TwoJobStream(caseFor(t, "healthy_allreduce"), caseFor(t, "gdr_bounce"), samples, 1, samples)
	metrics, logs := connectorReplay(t, twoJobHost, "two_jobs", stream, func(cfg *diagnosisconnector.Config) { cfg.PerOwner = true })
	st := newTestStore(t, nil)
	st.clock = time.Now()
	base := st.clock.Add(-samples * time.Second)
	for i, pts := range stream {
		st.consumeMetrics(scenario.Metrics(twoJobHost, "two_jobs", pts, base.Add(time.Duration(i)*time.Second)))
	}
	for _, md := range metrics {
		st.consumeMetrics(md)
	}
	for _, ld := range logs {
		st.consumeLogs(ld)
	}
	return st, metrics, logs
}

// lastSaid is, per owner (ownerRef, "" for the node's own), the node-level verdict that held in
// the connector's last evaluation and the body of its last node-level change.
func lastSaid(metrics []pmetric.Metrics, logs []plog.Logs) (verdicts, sentences map[string]string) {
	verdicts, sentences = map[string]string{}, map[string]string{}
	ms := metrics[len(metrics)-1].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := range ms.Len() {
		if ms.At(i).Name() != verdict.MetricVerdict {
			continue
		}
		dps := ms.At(i).Gauge().DataPoints()
		for j := range dps.Len() {
			a := dps.At(j).Attributes()
			if attr(a, verdict.AttrDevice) == "" && dps.At(j).IntValue() == 1 {
				verdicts[ownerRef(verdictOwner(a))] = attr(a, verdict.AttrVerdict)
			}
		}
	}
	for _, ld := range logs {
		for i := range ld.ResourceLogs().Len() {
			lrs := ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
			for j := range lrs.Len() {
				a := lrs.At(j).Attributes()
				if attr(a, verdict.AttrVerdict) != "" && attr(a, verdict.AttrDevice) == "" {
					sentences[ownerRef(verdictOwner(a))] = lrs.At(j).Body().Str()
				}
			}
		}
	}
	return verdicts, sentences
}

// TestNodeVerdictNotAnOwners: with per_owner, each job's node-level verdict has device "" like the
// node's own; the node's banner and the node list keep the node's, not whichever job's came last.
func TestNodeVerdictNotAnOwners(t *testing.T) {
	st, metrics, logs := twoJobView(t)
	verdicts, sentences := lastSaid(metrics, logs)
	jobA, jobB := "job:"+scenario.JobA, "job:"+scenario.JobB
	require.Equal(t, verdict.HealthyGPUDirect, verdicts[jobA], "the connector's verdict of job %s", scenario.JobA)
	require.Equal(t, verdict.GPUDirectBounce, verdicts[jobB], "the connector's verdict of job %s", scenario.JobB)
	require.NotEmpty(t, verdicts[""], "the connector's node verdict")

	d := st.view(t, twoJobHost).Diagnosis
	assert.Equal(t, "", d.Owner)
	assert.Equal(t, verdicts[""], d.Verdict)
	assert.Equal(t, sentences[""], d.Sentence)
	assert.NotContains(t, d.Sentence, "job ", "the node's sentence, not a job's")
	for _, n := range st.nodeList() {
		assert.Equal(t, verdicts[""], n.Verdict, "the node list")
	}
}

// TestOwnerFilter: /api/node?owner= narrows the node to one job: its GPUs', NIC's and netdev's
// lines, ports and GPU-NIC pairs, the per-node sums (the root complex, host memory) kept, its own
// node-level verdict and sentence, its devices' verdicts; the node's owners are listed for the
// page's selector.
func TestOwnerFilter(t *testing.T) {
	st, metrics, logs := twoJobView(t)
	verdicts, sentences := lastSaid(metrics, logs)
	for j, job := range []string{scenario.JobA, scenario.JobB} {
		id := nodestate.OwnerID{Kind: nodestate.OwnerJob, JobID: job}
		v, ok := st.nodeView(twoJobHost, 0, time.Second, id)
		require.True(t, ok)
		assert.Equal(t, "job:"+job, v.Owner)
		other := 1 - j
		var devices []string
		for _, s := range v.Series {
			devices = append(devices, s.Device)
		}
		for k := range scenario.JobGPUs {
			assert.Contains(t, devices, scenario.JobGPU(j, k))
			assert.NotContains(t, devices, scenario.JobGPU(other, k), "another job's GPU")
		}
		assert.Contains(t, devices, scenario.JobPort(j))
		assert.Contains(t, devices, scenario.JobNetdev(j))
		assert.NotContains(t, devices, scenario.JobPort(other), "another job's port")
		assert.NotContains(t, devices, scenario.JobNetdev(other), "another job's netdev")
		_, memory := seriesByLabel(v, "CPU MEM[RD]")
		assert.True(t, memory, "host memory is the node's, kept beside the job's lines: %v", labels(v))
		require.Len(t, v.Ports, 1)
		assert.Equal(t, scenario.JobPort(j), v.Ports[0].Device)
		require.NotEmpty(t, v.Topology.Pairs)
		for _, p := range v.Topology.Pairs {
			assert.True(t, strings.HasPrefix(p.GPUDevice, "gpu") && p.GPUDevice >= scenario.JobGPU(j, 0) && p.GPUDevice <= scenario.JobGPU(j, scenario.JobGPUs-1),
				"pair of GPU %s (%s)", p.GPU, p.GPUDevice)
		}

		d := v.Diagnosis
		assert.Equal(t, "job:"+job, d.Owner)
		assert.Equal(t, verdicts["job:"+job], d.Verdict)
		assert.Equal(t, sentences["job:"+job], d.Sentence)
		assert.Contains(t, d.Sentence, "job "+job)
		for _, dv := range d.Devices {
			assert.Equal(t, "job:"+job, dv.Owner, "device verdict %s@%s", dv.Verdict, dv.Device)
			// The connector's device log records name no owner; the verdict still has its sentence.
			assert.Contains(t, dv.Sentence, dv.Device, "the sentence of %s@%s", dv.Verdict, dv.Device)
		}
		for _, e := range d.Log {
			if e.Device == "" {
				assert.Equal(t, "job:"+job, e.Owner, "change %q", e.Sentence)
			}
		}

		require.Len(t, v.Owners, 2)
		assert.Equal(t, []string{"job:" + scenario.JobA, "job:" + scenario.JobB}, []string{v.Owners[0].ID, v.Owners[1].ID})
		assert.Contains(t, v.Owners[j].Devices, scenario.JobGPU(j, 0))
		assert.Equal(t, "job "+job, v.Owners[j].Label)
	}
	// The bouncing job's GPUs are named as not ready; the healthy job has no device verdict.
	b, _ := st.nodeView(twoJobHost, 0, time.Second, nodestate.OwnerID{Kind: nodestate.OwnerJob, JobID: scenario.JobB})
	a, _ := st.nodeView(twoJobHost, 0, time.Second, nodestate.OwnerID{Kind: nodestate.OwnerJob, JobID: scenario.JobA})
	whole := st.view(t, twoJobHost)
	assert.Len(t, whole.Diagnosis.Devices, len(a.Diagnosis.Devices)+len(b.Diagnosis.Devices), "the whole node shows every device verdict")
	require.NotEmpty(t, b.Diagnosis.Devices, "job %s's GPUs cannot do GPUDirect RDMA", scenario.JobB)
	for _, dv := range whole.Diagnosis.Devices {
		assert.NotEmpty(t, dv.Sentence, "%s@%s", dv.Verdict, dv.Device)
	}
	assert.Greater(t, len(whole.Series), len(a.Series))
	// The observed ratios are the owner's bytes over the owner's ports, not the node's.
	assert.Less(t, a.Observed.RDMABytesPerSecond, whole.Observed.RDMABytesPerSecond)
	assert.InDelta(t, whole.Observed.RDMABytesPerSecond, a.Observed.RDMABytesPerSecond+b.Observed.RDMABytesPerSecond, 1e-6*whole.Observed.RDMABytesPerSecond,
		"each RDMA byte in one job's view")
}

// TestDeviceVerdictEndsUnderEveryOwner: a device verdict raised while job 4711 owned the GPU ends
// with the connector's 0 for it, which carries the GPU's owner at that time: none, the job ended.
func TestDeviceVerdictEndsUnderEveryOwner(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	point := func(v float64, kv ...string) pt {
		return gauge(verdict.MetricVerdict, v, append([]string{verdict.AttrVerdict, verdict.GPUDirectNotReady, verdict.AttrDevice, "gpu0"}, kv...)...)
	}
	st.feed(start, batch("n", start, start, point(1, verdict.AttrOwnerKind, nodestate.OwnerJob, verdict.AttrJobID, "4711")))
	require.Len(t, st.view(t, "n").Diagnosis.Devices, 1)
	at := start.Add(time.Second)
	st.feed(at, batch("n", start, at, point(0, verdict.AttrOwnerKind, "", verdict.AttrJobID, "")))
	assert.Empty(t, st.view(t, "n").Diagnosis.Devices, "the verdict of a device whose job ended")
}

// TestOwnerRefs: the API's owner ids, both ways, and what it refuses.
func TestOwnerRefs(t *testing.T) {
	for _, o := range []nodestate.OwnerID{
		{Kind: nodestate.OwnerJob, JobID: "4711"},
		{Kind: nodestate.OwnerPod, Namespace: "train", Pod: "llama-0"},
		{},
	} {
		got, err := parseOwnerRef(ownerRef(o))
		require.NoError(t, err)
		assert.Equal(t, o, got)
	}
	for _, bad := range []string{"job:", "pod:train", "pod:/x", "pod:x/", "shared", "node:", "4711"} {
		_, err := parseOwnerRef(bad)
		assert.ErrorIs(t, err, errOwnerRef, bad)
	}
}

// TestOwnerFilterOverHTTP: the API takes the owner as the page's address writes it, and refuses
// one it cannot read with the form it expects.
func TestOwnerFilterOverHTTP(t *testing.T) {
	st, _, _ := twoJobView(t)
	server := httptest.NewServer(newHandler(st.store, 2*time.Second, nil))
	t.Cleanup(server.Close)
	srv := server.URL
	res, body := get(t, srv+"/api/node?name="+twoJobHost+"&owner=pod:nothing")
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, string(body), "owner: job:<id> or pod:<namespace>/<name>")
	res, body = get(t, srv+"/api/node?name="+twoJobHost+"&owner=job:"+scenario.JobB)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), `"owner":"job:`+scenario.JobB+`"`)
}

// TestOwnerFilterKeepsItsCollectives: a communicator's bus bandwidth line has no PCI address of
// its own; it is the job's whose GPU its lowest rank on the node runs on (nodestate.Collective.Bus,
// the nccl receiver's pci.bus_id), and another job's communicator is not drawn.
func TestOwnerFilterKeepsItsCollectives(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	gpus := []struct{ dev, bus, job, comm string }{{"gpu0", "0000:18:00.0", "4711", "0xaaaa"}, {"gpu1", "0000:28:00.0", "4712", "0xbbbb"}}
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		var pts []pt
		for _, g := range gpus {
			io := ioPoint("gpu_pcie", "transmit", g.dev, float64(i)*1e9)
			io.attrs[nodestate.AttrBusID] = g.bus
			pts = append(pts, io,
				gauge(nodestate.MetricOwner, 1, "component", "gpu_pcie", "device", g.dev, nodestate.AttrBusID, g.bus,
					nodestate.AttrOwnerKind, nodestate.OwnerJob, nodestate.AttrJobID, g.job),
				gauge(nodestate.MetricCollBusBandwidth, 40, nodestate.AttrCommID, g.comm, nodestate.AttrRank, "0",
					nodestate.AttrCollective, "AllReduce", nodestate.AttrMessageSize, nodestate.LargeMessageBuckets[0], nodestate.AttrBusID, g.bus))
		}
		st.feed(at, batch("n", start, at, pts...))
	}
	ids := func(v nodeJSON) (out []string) {
		for _, s := range v.Series {
			out = append(out, s.ID)
		}
		return out
	}
	whole := st.view(t, "n")
	require.Contains(t, ids(whole), "nccl/0xaaaa/AllReduce")
	require.Contains(t, ids(whole), "nccl/0xbbbb/AllReduce")
	v, ok := st.nodeView("n", 0, time.Second, nodestate.OwnerID{Kind: nodestate.OwnerJob, JobID: "4711"})
	require.True(t, ok)
	assert.Contains(t, ids(v), "nccl/0xaaaa/AllReduce")
	assert.Contains(t, ids(v), "gpu_pcie/transmit/gpu0")
	assert.NotContains(t, ids(v), "nccl/0xbbbb/AllReduce", "job 4712's communicator")
	assert.NotContains(t, ids(v), "gpu_pcie/transmit/gpu1")
}
