package lensviewexporter

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// nodeVerdict is the connector's node-level verdict gauge (internal/verdict's contract).
func nodeVerdict(which string) pt {
	return gauge(verdict.MetricVerdict, 1, verdict.AttrVerdict, which, verdict.AttrDevice, "")
}

// ownerPoint is the owner receiver's info series for one device.
func ownerPoint(device, kind, jobID, namespace string, v float64) pt {
	// The owner receiver keys a GPU by its PCI address (interconnect.owner, pci.bus_id): gpuN sits
	// at 0000:N1:00.0 here.
	bus := "0000:" + strings.TrimPrefix(device, "gpu") + "1:00.0"
	return gauge(nodestate.MetricOwner, v, "component", "gpu_pcie", "device", device, "owner.kind", kind, "job.id", jobID,
		"k8s.namespace.name", namespace, "k8s.pod.name", "", "owner.source", "slurm", "pci.bus_id", bus)
}

func clusterNodes(v clusterJSON) map[string]clusterNode {
	out := map[string]clusterNode{}
	for _, g := range v.Groups {
		for _, n := range g.Nodes {
			out[n.Name] = n
		}
	}
	return out
}

// TestClusterViewCells: each node's row holds one cell per run of its node-level verdict, at the
// times the connector reported them.
func TestClusterViewCells(t *testing.T) {
	st := newTestStore(t, func(c *Config) { c.Resolution = time.Second })
	start := st.clock
	for i := range 6 {
		at := start.Add(time.Duration(i) * time.Second)
		second := "healthy_gpudirect"
		if i >= 3 {
			second = "tcp_fallback"
		}
		st.feed(at, batch("node-a", start, at, nodeVerdict("healthy_gpudirect")))
		st.feed(at, batch("node-b", start, at, nodeVerdict(second)))
	}
	v := st.clusterView(1000)
	assert.False(t, v.Grouped, "no owner series: ungrouped")
	require.Len(t, v.Groups, 1)
	assert.Empty(t, v.Groups[0].Name)
	nodes := clusterNodes(v)
	require.Len(t, nodes, 2)
	ms := func(i int) int64 { return start.Add(time.Duration(i) * time.Second).UnixMilli() }
	assert.Equal(t, []verdictSpan{{From: ms(0), To: ms(5), Verdict: "healthy_gpudirect"}}, nodes["node-a"].Cells)
	assert.Equal(t, []verdictSpan{
		{From: ms(0), To: ms(3), Verdict: "healthy_gpudirect"},
		{From: ms(3), To: ms(5), Verdict: "tcp_fallback"},
	}, nodes["node-b"].Cells)
	assert.Equal(t, "tcp_fallback", nodes["node-b"].Verdict)
	assert.Equal(t, []string{"node-a", "node-b"}, []string{v.Groups[0].Nodes[0].Name, v.Groups[0].Nodes[1].Name})
}

// TestClusterViewGroupsByJob: nodes go to the job that owns most of their devices now; an
// ownership that ended (value 0) no longer counts; nodes no job owns come last, in group "".
func TestClusterViewGroupsByJob(t *testing.T) {
	st := newTestStore(t, nil)
	at := st.clock
	st.feed(at, batch("n1", at, at, nodeVerdict("healthy_gpudirect"),
		ownerPoint("gpu0", "job", "4242", "", 1), ownerPoint("gpu1", "job", "4242", "", 1), ownerPoint("gpu2", "job", "7", "", 1)))
	st.feed(at, batch("n2", at, at, nodeVerdict("tcp_fallback"), ownerPoint("gpu0", "job", "4242", "", 1)))
	// n3's job ended: its point went to 0.
	st.feed(at, batch("n3", at, at, nodeVerdict("idle"), ownerPoint("gpu0", "job", "7", "", 0)))
	st.feed(at, batch("n4", at, at, nodeVerdict("healthy_gpudirect"), ownerPoint("gpu0", "pod", "", "training", 1)))
	st.feed(at, batch("n5", at, at, nodeVerdict("idle")))

	v := st.clusterView(1000)
	assert.True(t, v.Grouped)
	var names []string
	members := map[string][]string{}
	for _, g := range v.Groups {
		names = append(names, g.Name)
		for _, n := range g.Nodes {
			members[g.Name] = append(members[g.Name], n.Name)
		}
	}
	assert.Equal(t, []string{"job 4242", "namespace training", ""}, names)
	assert.Equal(t, []string{"n1", "n2"}, members["job 4242"])
	assert.Equal(t, []string{"n4"}, members["namespace training"])
	assert.Equal(t, []string{"n3", "n5"}, members[""])

	// An hour later n1's owner points are stale: it is no job's any more.
	later := at.Add(time.Hour)
	st.feed(later, batch("n1", at, later, nodeVerdict("healthy_gpudirect")))
	groupOfN1, _ := st.groupOf(st.nodes["n1"], later)
	assert.Empty(t, groupOfN1)
}

// TestClusterAPIAndPage: the route answers the cluster view, the page is served and, like the
// node page, loads nothing from another host and has no inline style; the node page links to it.
func TestClusterAPIAndPage(t *testing.T) {
	st, srv := serve(t)
	at := st.clock
	st.feed(at, batch("node1", at, at, nodeVerdict("pfc_storm")))
	resp, body := get(t, srv.URL+"/api/cluster")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var v clusterJSON
	require.NoError(t, json.Unmarshal(body, &v))
	assert.Equal(t, int64(2000), v.RefreshMs)
	assert.Equal(t, "pfc_storm", clusterNodes(v)["node1"].Verdict)

	resp, body = get(t, srv.URL+"/cluster.html")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), `src="cluster.js"`)
	for _, name := range []string{"web/cluster.html", "web/cluster.js", "web/cluster.css"} {
		b, err := fs.ReadFile(web, name)
		require.NoError(t, err)
		assert.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`), string(b), name)
		assert.NotRegexp(t, regexp.MustCompile(`(?i)(fetch|import)\(\s*["'](https?:)?//`), string(b), name)
		assert.NotContains(t, string(b), " style=\"", name)
	}
	index, err := fs.ReadFile(web, "web/index.html")
	require.NoError(t, err)
	assert.Contains(t, string(index), `href="cluster.html"`)
}

// BenchmarkClusterView is /api/cluster's work for 2048 nodes with 30 minutes of verdicts at a
// 10 s resolution, a fault in every 16th node, 16 nodes a job.
func BenchmarkClusterView(b *testing.B) {
	st := newTestStore(b, func(c *Config) { c.Resolution = 10 * time.Second; c.MaxNodes = 4096 })
	start := st.clock
	for k := range 180 {
		at := start.Add(time.Duration(k) * 10 * time.Second)
		for i := range 2048 {
			which := "healthy_gpudirect"
			if i%16 == 15 && k >= 90 {
				which = "tcp_fallback"
			}
			host := "node" + itoa(int64(i))
			st.feed(at, batch(host, start, at, nodeVerdict(which), ownerPoint("gpu0", "job", itoa(int64(i/16)), "", 1)))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v := st.clusterView(2000)
		if len(v.Groups) != 128 {
			b.Fatalf("%d groups", len(v.Groups))
		}
	}
}
