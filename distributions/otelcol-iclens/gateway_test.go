package otelcoliclens_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// gatewayNode is one simulated node the test pushes into the gateway: the case its node1 plays
// and the Slurm job that owns its GPU and NIC ("" for none).
type gatewayNode struct {
	host, caseName, job string
}

var gatewayNodes = []gatewayNode{
	{"gw-a", "healthy_allreduce", "4242"},
	{"gw-b", "tcp_fallback", "4242"},
	{"gw-c", "healthy_allreduce", "7"},
	{"gw-d", "tcp_fallback", ""},
}

// gatewayEnv runs gateway.yaml on free loopback ports, the diagnosis every second (the nodes push
// every second here; the shipped interval is the nodes' 10 s).
func gatewayEnv(t *testing.T) (env []string, otlpHTTP, view string) {
	t.Helper()
	otlpHTTP, view = freeAddr(t), freeAddr(t)
	_, telemetryPort, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	return []string{
		"ICLENS_OTLP_GRPC_ENDPOINT=" + freeAddr(t), "ICLENS_OTLP_HTTP_ENDPOINT=" + otlpHTTP,
		"ICLENS_PROMETHEUS_ENDPOINT=" + freeAddr(t), "ICLENS_LENSVIEW_ENDPOINT=" + view,
		"ICLENS_HEALTH_ENDPOINT=" + freeAddr(t), "ICLENS_TELEMETRY_PORT=" + telemetryPort,
		"ICLENS_DIAGNOSIS_INTERVAL=1s", "ICLENS_DIAGNOSIS_WINDOW=3s", "ICLENS_LENSVIEW_RESOLUTION=1s",
	}, otlpHTTP, view
}

// pushNodes sends each node's simulated scrape to the gateway's OTLP/HTTP receiver once a second,
// stamped now, until the test ends: what the nodes' collectors export.
func pushNodes(t *testing.T, endpoint string, nodes []gatewayNode) {
	t.Helper()
	const samples = 600
	streams := make([][][]scenario.Point, len(nodes))
	for i, n := range nodes {
		c, ok := scenario.Named(n.caseName)
		require.True(t, ok, n.caseName)
		streams[i] = c.Stream(0, samples, 1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; i < samples; i++ {
			now := time.Now()
			for k, n := range nodes {
				pts := streams[k][i]
				if n.job != "" {
					pts = append(pts[:len(pts):len(pts)], scenario.JobOwnerPoints(n.job)...)
				}
				body, err := pmetricotlp.NewExportRequestFromMetrics(scenario.Metrics(n.host, n.caseName, pts, now)).MarshalProto()
				if err != nil {
					panic(err)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+endpoint+"/v1/metrics", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/x-protobuf")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// TestGatewayConfigValidates: the shipped gateway.yaml passes the built collector's validate.
func TestGatewayConfigValidates(t *testing.T) {
	bin := collectorBinary(t)
	out, err := exec.Command(bin, "validate", "--config", "gateway.yaml").CombinedOutput()
	assert.NoError(t, err, "%s", out)
}

// clusterRow is what the page shows of one node: its group heading, and its cells' verdicts.
type clusterRow struct {
	Group string   `json:"group"`
	Cells []string `json:"cells"`
	// Waits are the links of the peers the node waits on.
	Waits []string `json:"waits"`
}

// TestGatewayClusterPageInBrowser runs the built collector on gateway.yaml, pushes four simulated
// nodes' OTLP into it (two jobs' and one no job's, two of them on TCP), and asserts on what
// Chromium shows on the cluster page: a row per node under its job, the newest cell of each
// coloured by the verdict the gateway's diagnosis connector gave that node, the healthy node of
// the job with a node on TCP waiting on it (waits_on_peer), and a click on a cell opening that
// node's page with its verdict.
func TestGatewayClusterPageInBrowser(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	env, otlpHTTP, view := gatewayEnv(t)
	startCollectorWith(t, bin, "gateway.yaml", env)
	waitHTTP(t, "http://"+view+"/api/cluster")
	pushNodes(t, otlpHTTP, gatewayNodes)

	want := map[string]string{}
	for _, n := range gatewayNodes {
		c, _ := scenario.Named(n.caseName)
		want[n.host], _ = expectedVerdicts(c)
	}
	ctx, blog := startBrowser(t, browser, 3*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/cluster.html")))
	// Until every node's newest cell is its case's verdict: the connector's first verdicts come
	// after two evaluations with rates (hold), a few seconds after the first pushes.
	var rows map[string]clusterRow
	var err error
	deadline := time.Now().Add(90 * time.Second)
	for {
		rows, err = chromedp.Run(ctx, chromedp.Evaluate[map[string]clusterRow](`(() => {
			const out = {};
			for (const r of document.querySelectorAll('#cluster .cluster-row')) {
				const g = r.closest('.cluster-group');
				out[r.dataset.node] = {group: g ? g.dataset.group : '?', cells: [...r.querySelectorAll('.cell')].map(c => c.dataset.verdict),
					waits: [...r.querySelectorAll('.waits .peer')].map(a => a.getAttribute('href'))};
			}
			return out; })()`))
		require.NoError(t, err)
		if newestCells(rows, want) && len(rows["gw-a"].Waits) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.Len(t, rows, len(gatewayNodes), "a row per node: %v", rows)
	for _, n := range gatewayNodes {
		r := rows[n.host]
		require.NotEmpty(t, r.Cells, n.host)
		assert.Equal(t, want[n.host], r.Cells[len(r.Cells)-1], "%s's newest cell", n.host)
		wantGroup := ""
		if n.job != "" {
			wantGroup = "job " + n.job
		}
		assert.Equal(t, wantGroup, r.Group, n.host)
	}
	// gw-a, healthy in job 4242 beside gw-b on TCP, waits on gw-b (the connector's waits_on_peer),
	// its row linking to gw-b's page; gw-c (another job) and gw-d (no job) wait on no one, nor
	// does gw-b, whose fault is its own.
	assert.Equal(t, []string{"./#node=gw-b"}, rows["gw-a"].Waits, "gw-a waits on gw-b")
	for _, h := range []string{"gw-b", "gw-c", "gw-d"} {
		assert.Empty(t, rows[h].Waits, "%s waits on no one", h)
	}
	// No cell of a healthy node shows TCP, no cell of a TCP node says healthy.
	other := map[string]string{"healthy_gpudirect": "tcp_fallback", "tcp_fallback": "healthy_gpudirect"}
	for _, n := range gatewayNodes {
		assert.NotContains(t, rows[n.host].Cells, other[want[n.host]], n.host)
	}
	groups, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#cluster .cluster-group h3')].map(h => h.textContent)`))
	require.NoError(t, err)
	assert.Equal(t, []string{"job 4242 (2)", "job 7 (1)", "no job (1)"}, groups, "jobs by name, the nodes no job owns last")
	assert.Contains(t, text(t, ctx, "#grouping"), "Grouped by the job")

	// The axis spans the selector's default, the last 10 minutes, and 5 minutes when chosen.
	axisSpan := func() float64 {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => {
			const [a, b] = [...document.querySelectorAll('#axis span')].map(s => s.textContent.split(':').map(Number));
			return ((b[0] - a[0]) * 3600 + (b[1] - a[1]) * 60 + (b[2] - a[2]) + 86400) % 86400; })()`))
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, 600.0, axisSpan())
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById('span');
		s.value = '300000'; s.dispatchEvent(new Event('change')); })()`)))
	assert.Equal(t, 300.0, axisSpan())

	// A click on gw-b's newest cell opens gw-b's page, whose banner says TCP.
	box, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const c = document.querySelector('#cluster .cluster-row[data-node="gw-b"] .cell:last-child');
		c.scrollIntoView(); const r = c.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.MouseClickXY(box[0], box[1])))
	// The click navigates: evaluations during the navigation fail (no context yet) and are retried.
	var page string
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		page, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const v = document.getElementById('verdict');
			return location.pathname === '/' && v && v.dataset.verdict === 'tcp_fallback' ? location.hash : ''; })()`))
		if err == nil && page != "" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	assert.Equal(t, "#node=gw-b", page)

	// gw-a's own page lists its wait among the device verdicts, the peer's name a link to its page.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/#node=gw-a")))
	peer, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
		const a = document.querySelector('#verdict-devices .device-verdict[data-verdict="waits_on_peer"] a.peer');
		return a ? a.getAttribute('href') + ' ' + a.parentElement.textContent : false; })()`,
		chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(250*time.Millisecond)))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(peer, "#node=gw-b gw-b: Waits on a faulty peer (waits_on_peer) — gw-a waits on gw-b (job 4242): gw-b is on TCP (tcp_fallback)"), peer)
	assertOnlyOwnHost(t, blog, view)
}

// newestCells reports whether every node has a row whose newest cell is its wanted verdict.
func newestCells(rows map[string]clusterRow, want map[string]string) bool {
	for host, v := range want {
		c := rows[host].Cells
		if len(c) == 0 || c[len(c)-1] != v {
			return false
		}
	}
	return true
}

// TestGatewayClusterUngrouped: nodes that send no interconnect.owner are one ungrouped list, and
// the page says why.
func TestGatewayClusterUngrouped(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	env, otlpHTTP, view := gatewayEnv(t)
	startCollectorWith(t, bin, "gateway.yaml", env)
	waitHTTP(t, "http://"+view+"/api/cluster")
	pushNodes(t, otlpHTTP, []gatewayNode{{"solo-1", "healthy_allreduce", ""}, {"solo-2", "gdr_bounce", ""}})
	ctx, _ := startBrowser(t, browser, 2*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/cluster.html")))
	nodes, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => { const r = [...document.querySelectorAll('#cluster .cluster-row')].map(r => r.dataset.node);
		return r.length === 2 ? r : false; })()`, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(250*time.Millisecond)))
	require.NoError(t, err)
	sort.Strings(nodes)
	assert.Equal(t, []string{"solo-1", "solo-2"}, nodes)
	headings, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#cluster .cluster-group h3').length`))
	require.NoError(t, err)
	assert.Zero(t, headings, "no group headings when no node has an owner")
	note := text(t, ctx, "#grouping")
	assert.True(t, strings.HasPrefix(note, "Ungrouped: no node sent interconnect.owner"), note)
}

// waitHTTP waits until url answers 200: the collector started (tens of seconds on a loaded
// machine).
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(waitServed)
	for {
		resp, err := http.Get(url)
		if err == nil {
			var v json.RawMessage
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&v) == nil
			resp.Body.Close()
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			require.Fail(t, fmt.Sprintf("%s did not answer within %s: %v", url, waitServed, err))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGatewayEvictionSaidAtWarn: a gateway whose max_nodes (ICLENS_MAX_NODES) is below the fleet
// keeps max_nodes nodes and says the evictions at Warn with a count, in the view and in the
// connector, never silently.
func TestGatewayEvictionSaidAtWarn(t *testing.T) {
	bin := collectorBinary(t)
	env, otlpHTTP, view := gatewayEnv(t)
	logs := startCollectorWith(t, bin, "gateway.yaml", append(env, "ICLENS_MAX_NODES=2"))
	waitHTTP(t, "http://"+view+"/api/cluster")
	pushNodes(t, otlpHTTP, gatewayNodes)
	deadline := time.Now().Add(waitLogged)
	said := func() (view, connector bool) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(l, "\twarn\t") || !strings.Contains(l, "more nodes than max_nodes") || !strings.Contains(l, `"evicted": `) {
				continue
			}
			view = view || strings.Contains(l, `"otelcol.component.id": "lensview"`)
			connector = connector || strings.Contains(l, `"otelcol.component.id": "diagnosis"`)
		}
		return view, connector
	}
	for v, c := said(); !(v && c); v, c = said() {
		require.True(t, time.Now().Before(deadline), "no eviction warning from both the view and the connector within %s", waitLogged)
		time.Sleep(200 * time.Millisecond)
	}
	var nodes []json.RawMessage
	resp, err := http.Get("http://" + view + "/api/nodes")
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&nodes))
	resp.Body.Close()
	assert.LessOrEqual(t, len(nodes), 2, "the view keeps max_nodes nodes")
}
