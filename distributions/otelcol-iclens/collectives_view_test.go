package otelcoliclens_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// TestLensViewDrawsCollectivesInBrowser replays the steady NCCL cases with the demo's
// configuration (iclens-simulate: a nccl receiver per case on the Inspector dumps, Prometheus and
// lensview exporters) and opens each slow case's node in headless Chromium: the collective's bus
// bandwidth is drawn on the node's bandwidth chart beside the links' bytes, and the verdict under
// the banner names the collective, its bus bandwidth and what explains it.
func TestLensViewDrawsCollectivesInBrowser(t *testing.T) {
	t.Parallel() // waits on the clock, not the CPU (Makefile E2E_PARALLEL)
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	o := simulate.Options{Dir: dir, Interval: time.Second, Samples: 60, UncoreFixture: fixture}
	cases := simulate.SteadyNCCLCases()
	src := simulate.NCCLSources{Cases: map[string]bool{}}
	for _, c := range cases {
		src.Cases[c.Name] = true
	}
	_, err := simulate.WriteCases(o, cases)
	require.NoError(t, err)
	_, err = simulate.WriteNCCL(o)
	require.NoError(t, err)
	cfg, err := simulate.CollectorConfigWithNCCL(dir, time.Second, simulate.ExportPrometheus, cases, src)
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	view := freeAddr(t)
	startCollectorWith(t, bin, cfgPath, []string{"ICLENS_PROMETHEUS_ENDPOINT=" + freeAddr(t), "ICLENS_LENSVIEW_ENDPOINT=" + view})
	base := "http://" + view + "/"
	require.Eventually(t, func() bool {
		resp, err := http.Get(base)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the view did not come up on %s", base)
	ctx, blog := startBrowser(t, browser, 2*time.Minute)

	for _, tc := range []struct{ name, busbw, cause string }{
		{"nccl_tcp_fallback", "2.8 GB/s", "NCCL is on TCP (RDMA 0 B/s, ens1f0np0"},
		{"nccl_slow_no_hardware_cause", "4.0 GB/s", "the hardware looks healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := scenario.Named(tc.name)
			require.True(t, ok)
			node := scenario.HostName(c, "node1")
			comm := scenario.CommID(c)
			label := "NCCL AllReduce(" + comm + ") bus bw"
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"#node="+url.QueryEscape(node))))
			// Five drawn points: five scrapes of the nccl receiver since the page opened.
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`lens.view && lens.view.node === %q && (lens.drawn[%q] || 0) >= 5 &&
				(lens.drawn['NET(ens1f0np0)[TX]'] || 0) >= 5`, node, label),
				chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(250*time.Millisecond)))
			require.NoError(t, err, "%s: %s not drawn on the bandwidth chart", node, label)
			// The drawn values are the model's bus bandwidth (2.8 GB/s over the sockets, 4 GB/s
			// on one channel), in bytes/s on the chart's own axis.
			last, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`(() => { const s = lens.view.series.find(s => s.label === %q);
				return s.axis === 'bytes' ? s.v[s.v.length - 1] : -1; })()`, label)))
			require.NoError(t, err)
			want := map[string]float64{"nccl_tcp_fallback": 2.8e9, "nccl_slow_no_hardware_cause": 4e9}[tc.name]
			assert.InDelta(t, want, last, 1e6)

			line := comm + "/AllReduce: NCCL collective slow (collective_slow) — " + node + ": AllReduce on comm " + comm + " at " + tc.busbw + " bus bandwidth"
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`[...document.querySelectorAll('#verdict-devices .device-verdict')].some(l =>
				l.dataset.verdict === 'collective_slow' && l.textContent.startsWith(%q) && l.textContent.includes(%q))`, line, tc.cause),
				chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(250*time.Millisecond)))
			assert.NoError(t, err, "%s: the verdict does not name the collective: %q", node, text(t, ctx, "#verdict-devices"))
		})
	}
	assertOnlyOwnHost(t, blog, view)
}
