//go:build integration

package otelcoliclens_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// TestLensViewOwnerFilterInBrowser sends the built collector, over OTLP, the two-job node of
// internal/scenario (TwoJobStream: job 4711 healthy on gpu0-3 and mlx5_0, job 4712 bouncing
// through host memory on gpu4-7 and mlx5_1), one sample a second, with the owner receiver's
// series; the diagnosis connector evaluates it per owner and the lensview exporter serves it. In
// headless Chromium, opened at #node=…&owner=job:4712, the page draws only that job's GPUs and
// port beside the node's host memory, and its banner is the job's own verdict; the owner selector
// switches to job 4711 (healthy, its own lines) and back to the whole node, whose banner is the
// node's verdict, not a job's, and the address follows.
func TestLensViewOwnerFilterInBrowser(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	const host, samples = "twojob-view", 240
	otlp, view, prom := freeAddr(t), freeAddr(t), freeAddr(t)
	startCollector(t, bin, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http: {endpoint: %s}
connectors:
  diagnosis:
    interval: 1s
    window: 3s
    per_owner: true
exporters:
  lensview:
    endpoint: %s
  prometheus:
    endpoint: %s
    resource_constant_labels: {included: [host.name]}
service:
  pipelines:
    metrics: {receivers: [otlp], exporters: [lensview, diagnosis]}
    metrics/diagnosis: {receivers: [diagnosis], exporters: [lensview, prometheus]}
    logs: {receivers: [diagnosis], exporters: [lensview]}
  telemetry: {metrics: {level: none}}
`, otlp, view, prom))
	require.Eventually(t, func() bool { return dialable(otlp) }, 30*time.Second, 100*time.Millisecond, "the collector's OTLP receiver did not listen")

	// The node keeps sending while the page is looked at, a sample a second stamped with its own
	// time, so that its verdicts hold throughout (they end when its metrics end); the first
	// samples are in before the page opens.
	stream := scenario.TwoJobStream(scenarioCase(t, "healthy_allreduce"), scenarioCase(t, "gdr_bounce"), samples, 1, samples)
	start := time.Now().Truncate(time.Second).Add(time.Second)
	stop, sent := make(chan struct{}), make(chan error, 1)
	go func() {
		var marshal pmetric.JSONMarshaler
		for i, pts := range stream {
			at := start.Add(time.Duration(i) * time.Second)
			select {
			case <-stop:
				sent <- nil
				return
			case <-time.After(time.Until(at)):
			}
			body, err := marshal.MarshalMetrics(twoJobMetrics(host, pts, at, true))
			if err == nil {
				var resp *http.Response
				if resp, err = http.Post("http://"+otlp+"/v1/metrics", "application/json", bytes.NewReader(body)); err == nil {
					resp.Body.Close()
				}
			}
			if err != nil {
				sent <- fmt.Errorf("sample %d: %w", i, err)
				return
			}
		}
		sent <- nil
	}()
	t.Cleanup(func() {
		close(stop)
		assert.NoError(t, <-sent, "posting the stream")
	})
	time.Sleep(time.Until(start.Add(5 * time.Second)))

	ctx, blog := startBrowser(t, browser, 3*time.Minute)
	jobA, jobB := "job:"+scenario.JobA, "job:"+scenario.JobB
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/#node="+host+"&owner="+jobB)))
	// What the page shows: the chart's legend, the banner, the port table, the selector.
	type shown struct {
		Verdict, Title, Devices, Hash string
		Lines, Ports, Owners          []string
		Owner                         string
	}
	const read = `(() => ({
		verdict: document.getElementById('verdict').dataset.verdict || '',
		title: document.getElementById('verdict-name').innerText,
		devices: document.getElementById('verdict-devices').innerText,
		hash: decodeURIComponent(location.hash),
		lines: lens.chart ? lens.chart.series.slice(1).map(s => s.label) : [],
		ports: [...document.querySelectorAll('#ports tbody tr td:first-child')].map(e => e.innerText),
		owners: [...document.querySelectorAll('#owner option')].map(e => e.value),
		owner: document.getElementById('owner').value,
	}))()`
	until := func(what, cond string) shown {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(200*time.Millisecond)))
		got, rerr := chromedp.Run(ctx, chromedp.Evaluate[shown](read))
		require.NoError(t, rerr)
		require.NoError(t, err, "%s (waited a minute); the page shows %+v", what, got)
		return got
	}
	pick := func(owner string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const s = document.getElementById('owner');
			s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, owner)))
		require.NoError(t, err)
	}
	gpus := func(j int) (out []string) {
		for k := range scenario.JobGPUs {
			out = append(out, "GPU"+strings.TrimPrefix(scenario.JobGPU(j, k), "gpu")+" PCIe[TX]")
		}
		return out
	}

	got := until("job 4712's bounce", `document.getElementById('verdict').dataset.verdict === 'gpudirect_bounce' && lens.chart !== null`)
	assert.True(t, strings.HasPrefix(got.Title, "job "+scenario.JobB+": "), "the banner says whose verdict it is: %q", got.Title)
	assert.Equal(t, jobB, got.Owner)
	assert.Equal(t, []string{"", jobA, jobB}, got.Owners, "the selector: the whole node and its two jobs")
	for _, l := range gpus(1) {
		assert.Contains(t, got.Lines, l)
	}
	for _, l := range gpus(0) {
		assert.NotContains(t, got.Lines, l, "another job's GPU is drawn")
	}
	assert.Contains(t, got.Lines, "CPU MEM[RD]", "host memory is the node's, drawn beside the job's lines")
	assert.Equal(t, []string{scenario.JobPort(1)}, got.Ports)
	for k := range scenario.JobGPUs {
		assert.Contains(t, got.Devices, scenario.JobGPU(1, k)+": GPUDirect RDMA not ready", "job 4712's GPUs cannot do GPUDirect RDMA")
		assert.NotContains(t, got.Devices, scenario.JobGPU(0, k)+":", "job 4711's GPU under job 4712")
	}

	pick(jobA)
	got = until("job 4711 healthy", `document.getElementById('verdict').dataset.verdict === 'healthy_gpudirect' &&
		document.getElementById('verdict-name').innerText.startsWith('job `+scenario.JobA+`: ') && lens.chart !== null &&
		lens.chart.series.some(s => s.label === 'GPU0 PCIe[TX]')`)
	assert.Contains(t, got.Hash, "owner="+jobA, "the address follows the selector")
	for _, l := range gpus(1) {
		assert.NotContains(t, got.Lines, l, "job 4712's GPU is drawn under job 4711")
	}
	assert.Equal(t, []string{scenario.JobPort(0)}, got.Ports)
	assert.Empty(t, got.Devices, "job 4711 has no device verdict")

	// The node's own verdict, as the connector reports it beside the jobs' (no job_id).
	nodeVerdict := func() string {
		resp, err := http.Get("http://" + prom + "/metrics")
		if err != nil {
			return ""
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "diagnosis_verdict_ratio{") && strings.Contains(line, `host_name="`+host+`"`) &&
				strings.Contains(line, `device=""`) && !strings.Contains(line, `job_id="4`) && strings.HasSuffix(line, " 1") {
				if m := regexp.MustCompile(`verdict="([a-z_]+)"`).FindStringSubmatch(line); m != nil {
					return m[1]
				}
			}
		}
		return ""
	}
	var own string
	require.Eventually(t, func() bool { own = nodeVerdict(); return own != "" }, time.Minute, 200*time.Millisecond, "the connector's node verdict in /metrics")

	pick("")
	got = until("the whole node", `!document.getElementById('verdict-name').innerText.startsWith('job ') && lens.chart !== null &&
		lens.chart.series.some(s => s.label === 'GPU0 PCIe[TX]') && lens.chart.series.some(s => s.label === 'GPU4 PCIe[TX]')`)
	assert.NotContains(t, got.Hash, "owner=")
	assert.ElementsMatch(t, []string{scenario.JobPort(0), scenario.JobPort(1)}, got.Ports)
	assert.Equal(t, own, got.Verdict, "the banner is the node's own verdict, not a job's")
	t.Logf("whole node: %s; %s", got.Title, got.Devices)
	assertOnlyOwnHost(t, blog, view)
}
