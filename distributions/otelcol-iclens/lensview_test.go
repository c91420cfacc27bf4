package otelcoliclens_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// updateScreenshots rewrites the README's screenshots (docs/lensview-*.png) from this test:
//
//	make build && ICLENS_COLLECTOR=$PWD/bin/otelcol-iclens go test ./distributions/otelcol-iclens -run TestLensViewInBrowser -update-screenshots
var updateScreenshots = flag.Bool("update-screenshots", false, "write the README screenshots of the lensview page to docs/")

// readmeScreenshots are the cases the README shows.
var readmeScreenshots = map[string]bool{"tcp_fallback": true, "gdr_bounce": true}

// chromiumBinary finds Debian's chromium (installed by .ci/run). Outside CI a machine without
// one skips the test and says how to get it.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium: apt-get install chromium (or set CHROMIUM) to run the browser test")
	return ""
}

// hasComponent reports whether the built collector contains a component of that type, from
// its own `components` command.
func hasComponent(t *testing.T, bin, kind, typ string) bool {
	t.Helper()
	out, err := exec.Command(bin, "components").Output()
	require.NoError(t, err)
	var comps map[string]yaml.Node
	require.NoError(t, yaml.Unmarshal(out, &comps), "%s", out)
	node, ok := comps[kind]
	if !ok {
		return false
	}
	var list []struct {
		Name string `yaml:"name"`
	}
	require.NoError(t, node.Decode(&list), "%s", out)
	for _, c := range list {
		if c.Name == typ {
			return true
		}
	}
	return false
}

// browserLog collects what the page did that the test must see: console errors and
// exceptions, and every URL it requested.
type browserLog struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (b *browserLog) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := ev.(*network.EventRequestWillBeSent); ok && e.Request != nil {
		b.requests = append(b.requests, e.Request.URL)
	}
}

func (b *browserLog) snapshot() (errs, reqs []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...), append([]string(nil), b.requests...)
}

// drawnSeries is what the page says uPlot drew: per legend entry, whether it is shown and how
// many points of it the last draw put on the canvas (the drawSeries hook of app.js).
type drawnSeries struct {
	Label   string `json:"label"`
	Show    bool   `json:"show"`
	Visible bool   `json:"visible"`
	Points  int    `json:"points"`
}

// The series every simulated node has: every component and direction the receivers replay,
// named as the paper names them.
var everySeries = []string{
	"RNIC(mlx5_0)[TX]", "RNIC(mlx5_0)[RX]", "NET(ens1f0np0)[TX]", "NET(ens1f0np0)[RX]",
	"CPU PCIe[TX]", "CPU PCIe[RX]", "CPU MEM[RD]", "CPU MEM[WR]",
	"GPU0 PCIe[TX]", "GPU0 PCIe[RX]", "GPU0 MEM BW[RD/WR]",
}

// expectedVerdicts is what the diagnosis connector says about a steady case's node1
// (internal/scenario's expectations): the node-level verdict ("" where none fits, as while a pause
// storm stalls the node) and the device verdicts, as "verdict@device".
func expectedVerdicts(c scenario.Case) (node string, devices []string) {
	for _, e := range c.Phases[0].Expect[0] {
		if strings.Contains(e, "@") {
			devices = append(devices, e)
		} else {
			node = e
		}
	}
	return node, devices
}

// TestLensViewInBrowser replays every simulated case through the built collector with the
// demo's configuration (tools/simulate.CollectorConfig: Prometheus and lensview exporters)
// and opens the lensview page in a real headless Chromium. It asserts on what the browser
// shows: every component x direction series drawn, the tooltip's value on the congestion case,
// the evidence ratios, the RDMA port and readiness tables, the verdict banner where the
// collector has the diagnosis connector, live updates without reload, no console error and no
// request to any other host. Screenshots of each case are written to a folder it prints.
func TestLensViewInBrowser(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	diagnosis := hasComponent(t, bin, "connectors", "diagnosis")

	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	_, err := simulate.Write(simulate.Options{Dir: dir, Interval: time.Second, Samples: 120, UncoreFixture: fixture})
	require.NoError(t, err)
	cfg, err := simulate.CollectorConfig(dir, time.Second, simulate.ExportPrometheus)
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	view := freeAddr(t)
	logs := startCollectorWith(t, bin, cfgPath, []string{"ICLENS_PROMETHEUS_ENDPOINT=" + freeAddr(t), "ICLENS_LENSVIEW_ENDPOINT=" + view})
	base := "http://" + view + "/"

	shots := os.Getenv("ICLENS_SCREENSHOTS")
	if shots == "" {
		shots, err = os.MkdirTemp(keptTempDir, "lensview-screenshots-")
		require.NoError(t, err)
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	t.Logf("screenshots of every case: %s", shots)

	ctx, blog := startBrowser(t, browser, 4*time.Minute)
	// The view listens once the collector has built every pipeline: with every simulated case
	// (108 replaying receivers) that takes longer than startCollectorWith waits.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the view did not come up on %s", base)

	// Enough replayed seconds for every series to have a stretch of points.
	first := scenario.HostName(scenario.Cases()[0], "node1")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"#node="+url.QueryEscape(first))))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`window.lens && lens.view && lens.view.series.length > 0 &&
		lens.view.series.every(s => s.t.length >= 8 || s.axis === 'events')`, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(500*time.Millisecond)))
	require.NoError(t, err, "the page never showed the replayed series")
	// Mark the document: a reload would lose the mark.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`)))

	for _, c := range scenario.Cases() {
		node := scenario.HostName(c, "node1")
		t.Run(c.Name, func(t *testing.T) {
			// Choose the node as an operator would, with the selector.
			require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
				`(() => { const s = document.getElementById('node'); s.value = %q; s.dispatchEvent(new Event('change')); })()`, node))))
			// Wait until every series has its stretch of points too: a case's receivers may have
			// started a few seconds after the first case's on a loaded machine.
			labels, err := json.Marshal(everySeries)
			require.NoError(t, err)
			_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`lens.view && lens.view.node === %q && lens.chart && lens.chart.series.length > %d &&
				Object.keys(lens.drawn).length >= %d && %s.every(l => (lens.drawn[l] || 0) >= 5)`, node, len(everySeries), len(everySeries), labels),
				chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
			require.NoError(t, err, "the page did not switch to %s, or drew fewer than 5 points of a series", node)

			drawn, err := chromedp.Run(ctx, chromedp.Evaluate[[]drawnSeries](`lens.chart.series.slice(1).map(s => {
				const rows = [...document.querySelectorAll('#chart .u-legend .u-series')];
				const legend = rows.find(r => r.innerText.trim() === s.label);
				return {label: s.label, show: s.show, visible: !!(legend && legend.offsetParent), points: lens.drawn[s.label] || 0};
			})`))
			require.NoError(t, err)
			byLabel := map[string]drawnSeries{}
			for _, d := range drawn {
				byLabel[d.Label] = d
			}
			for _, want := range everySeries {
				d, ok := byLabel[want]
				if assert.True(t, ok, "series %s not in the chart (has %v)", want, drawn) {
					assert.True(t, d.Show && d.Visible, "series %s hidden: %+v", want, d)
					assert.GreaterOrEqual(t, d.Points, 5, "series %s: uPlot drew %d points", want, d.Points)
				}
			}

			// And on the canvas: each series alone, its stroke colour's pixels counted.
			pixels, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]int](paintedPixels, chromedp.EvalAwaitPromise))
			require.NoError(t, err)
			spans, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]float64](seriesSpans))
			require.NoError(t, err)
			t.Logf("pixels of each series' colour, drawn alone: %v; canvas pixels from its first point to its last: %v", pixels, spans)
			for _, want := range everySeries {
				// A line from its first point to its last paints its colour along that span: on
				// an idle machine 0.3 to 2.5 pixels per column of it (dashed, flat at the plot's
				// edge, or zigzagging); at least 0.1 is asked. The span, not a fixed count: how
				// long it is depends on how many seconds the case's receivers have replayed when
				// the page gets to it, which a loaded machine makes few.
				require.Greater(t, spans[want], 0.0, "series %s: its points span nothing (%v)", want, spans)
				assert.GreaterOrEqual(t, float64(pixels[want]), spans[want]/10, "series %s: no line of its colour across its points (%v, spans %v)", want, pixels, spans)
			}

			observed := chipValues(t, ctx, "#observed")
			switch c.Name {
			case "healthy_allreduce", "healthy_broadcast":
				assert.Greater(t, observed["mean_rdma_bytes_per_network_byte"], 0.99, "healthy: the bytes go over RDMA")
				assert.Less(t, observed["mean_cpu_pcie_bytes_per_network_byte"], 0.1, "healthy: the root complex sees none of them")
			case "tcp_fallback":
				assert.Less(t, observed["mean_rdma_bytes_per_network_byte"], 0.01, "TCP fallback: the RNIC is idle")
				assert.Greater(t, observed["mean_cpu_pcie_bytes_per_network_byte"], 1.5, "TCP fallback: every byte crosses the root complex twice")
				assert.Greater(t, observed["mean_host_memory_bytes_per_network_byte"], 2.5, "TCP fallback: and host memory three times")
			case "gdr_bounce":
				assert.Greater(t, observed["mean_rdma_bytes_per_network_byte"], 0.99, "bounce: RDMA is used")
				assert.Greater(t, observed["mean_cpu_pcie_bytes_per_network_byte"], 1.5, "bounce: yet every byte crosses the root complex")
				assert.Greater(t, observed["mean_host_memory_bytes_per_network_byte"], 0.9, "bounce: and is staged in host memory")
				assert.Contains(t, rowText(t, ctx, "#topology tbody tr"), "no", "bounce: the readiness table says GPUDirect RDMA cannot work")
				assert.Contains(t, text(t, ctx, "#peermem"), "nvidia_peermem no")
			case "congestion_20g":
				// (4096-58)/4096 x 20 Gb/s over the port's 100 Gb/s.
				assert.InEpsilon(t, scenario.CongestedRate/12.5e9, observed["mean_rdma_transmit_bytes_per_line_byte"], 0.02)
				assert.Less(t, observed["mean_cpu_pcie_bytes_per_network_byte"], 0.1, "congestion: no host-side load")
				ports := rowText(t, ctx, "#ports tbody tr")
				assert.Contains(t, ports, "100 Gb/s 4X")
				assert.Regexp(t, `(1[5-9]|2[0-9])\.\d+ k`, ports, "congestion: CNPs and ECN marks per second in the port table")
			case "link_downgrade":
				assert.Contains(t, rowText(t, ctx, "#ports tbody tr"), "50 Gb/s 2X", "the port trained down to 2 lanes")
			case "pfc_storm":
				// The port table's rates are the newest three intervals' (a replay moves one
				// recorded second a scrape, whenever the scrape runs): within a quarter of the
				// recorded 95 k/s however late a loaded machine scrapes once.
				row := rowText(t, ctx, "#ports tbody tr")
				m := regexp.MustCompile(`(\d+(?:\.\d+)?) k`).FindAllStringSubmatch(row, -1)
				var pauses []float64
				for _, g := range m {
					v, _ := strconv.ParseFloat(g[1], 64)
					pauses = append(pauses, v*1e3)
				}
				require.NotEmpty(t, pauses, "PFC storm: pause frames/s in the port table: %q", row)
				assert.InEpsilon(t, 95e3, slices.Max(pauses), 0.25, "PFC storm: ~95 k pause frames/s received: %q", row)
			}

			// Hover the chart as a reader would; the tooltip names every series with value and unit.
			tip := hover(t, ctx, 0.75)
			for _, want := range everySeries {
				assert.Regexp(t, regexp.QuoteMeta(want)+`: \d+(\.\d+)? (B/s|kB/s|MB/s|GB/s|%)`, tip, "tooltip row of %s", want)
			}
			if c.Name == "congestion_20g" {
				// The paper's tooltip: RNIC TX at the 20 Gb/s port's 2.47 GB/s. A replay advances
				// one recorded sample per scrape, so a scrape that a loaded machine delays by a
				// tenth of a second moves one point by a tenth (a real port's counters move with
				// time); the test reads five points along the chart and takes their median.
				var reads []float64
				for _, at := range []float64{0.55, 0.65, 0.75, 0.85, 0.95} {
					reads = append(reads, tooltipBytes(t, hover(t, ctx, at), "RNIC(mlx5_0)[TX]"))
				}
				sort.Float64s(reads)
				t.Logf("tooltip RNIC(mlx5_0)[TX] at five points: %v B/s", reads)
				assert.InEpsilon(t, 2.46e9, reads[2], 0.02, "the tooltip's RNIC TX on the congestion case: %v", reads)
			}

			t.Run("verdict", func(t *testing.T) {
				if !diagnosis {
					t.Skip("the collector has no diagnosis connector (otelcol-iclens components): the banner is asserted once it does")
				}
				if len(c.Phases) > 1 {
					t.Skip("a transition: the banner follows the replay's phase (the end-to-end test judges it)")
				}
				want, devices := expectedVerdicts(c)
				got, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const v = document.getElementById('verdict').dataset.verdict;
					return v === %q ? 'v=' + v : false; })()`, want), chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(500*time.Millisecond)))
				if err != nil {
					banner := text(t, ctx, "#verdict")
					t.Fatalf("banner of %s does not name %q: %q (the demo config must route the diagnosis connector's metrics and logs to lensview)", node, want, banner)
				}
				assert.Equal(t, "v="+want, got)
				if want != "" {
					assert.Contains(t, text(t, ctx, "#verdict-name"), want)
				}
				// Device verdicts (a port trained down, a pause storm, a GPU that cannot do
				// GPUDirect) are listed under the banner: "<device>: <title> (<verdict>)".
				for _, dv := range devices {
					verdict, device, _ := strings.Cut(dv, "@")
					_, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`[...document.querySelectorAll('#verdict-devices .device-verdict')].some(l =>
						l.dataset.verdict === %q && l.textContent.startsWith(%q))`, verdict, device+": "),
						chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(500*time.Millisecond)))
					assert.NoError(t, err, "%s: device verdict %s not listed: %q", node, dv, text(t, ctx, "#verdict-devices"))
				}
			})

			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(shots, c.Name+".png"), shot, 0o644))
			if *updateScreenshots && readmeScreenshots[c.Name] {
				require.NoError(t, os.WriteFile(filepath.Join("..", "..", "docs", "lensview-"+c.Name+".png"), shot, 0o644))
			}
		})
	}

	// Live: the newest point advances without a reload.
	before, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`lens.view.now`))
	require.NoError(t, err)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`lens.view.now > %f + 3000 && window.__notReloaded === true`, before),
		chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(250*time.Millisecond)))
	assert.NoError(t, err, "the page did not update in place")

	assertOnlyOwnHost(t, blog, view)
	assert.NotContains(t, logs.String(), "\terror\t")
}

// startBrowser starts headless Chromium with one tab and records the tab's console errors and
// exceptions (CSP violations included) and every URL it requests.
func startBrowser(t *testing.T, browser string, timeout time.Duration) (context.Context, *browserLog) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1400, 1250),
		chromedp.Flag("lang", "en-US"), chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	blog := &browserLog{}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(blog.listen))
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				blog.mu.Lock()
				blog.errors = append(blog.errors, m.String())
				blog.mu.Unlock()
			}
		}
	}()
	return ctx, blog
}

// assertOnlyOwnHost checks that the page logged no error and requested nothing from another host.
func assertOnlyOwnHost(t *testing.T, blog *browserLog, host string) {
	t.Helper()
	errs, reqs := blog.snapshot()
	assert.Empty(t, errs, "console errors")
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		u, err := url.Parse(r)
		if assert.NoError(t, err) && u.Scheme != "data" {
			assert.Equal(t, host, u.Host, "the page requested another host: %s", r)
		}
	}
}

// paintedPixels shows each series of the main chart alone, lets uPlot redraw, and counts the
// canvas pixels of the series' stroke colour (within antialiasing): what a reader sees drawn.
const paintedPixels = `(async () => {
	const u = lens.chart, out = {};
	const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
	const rgb = c => { const x = document.createElement('canvas').getContext('2d'); x.fillStyle = c; const h = x.fillStyle;
		return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)]; };
	for (let i = 1; i < u.series.length; i++) {
		for (let j = 1; j < u.series.length; j++) u.setSeries(j, {show: j === i});
		await frame();
		const [r, g, b] = rgb(u.series[i]._stroke || u.series[i].stroke());
		const d = u.ctx.getImageData(0, 0, u.ctx.canvas.width, u.ctx.canvas.height).data;
		let n = 0;
		for (let k = 0; k < d.length; k += 4) {
			if (d[k + 3] > 200 && Math.abs(d[k] - r) + Math.abs(d[k + 1] - g) + Math.abs(d[k + 2] - b) < 60) n++;
		}
		out[u.series[i].label] = n;
	}
	for (let j = 1; j < u.series.length; j++) u.setSeries(j, {show: true});
	await frame();
	return out;
})()`

// seriesSpans is, per series of the main chart, how many canvas pixels lie between the x of its
// first and its last drawn point.
const seriesSpans = `(() => {
	const u = lens.chart, out = {};
	for (let i = 1; i < u.series.length; i++) {
		const ys = u.data[i] || [];
		let first = -1, last = -1;
		for (let k = 0; k < ys.length; k++) if (ys[k] != null) { if (first < 0) first = k; last = k; }
		out[u.series[i].label] = first < 0 ? 0 : Math.abs(u.valToPos(u.data[0][last], 'x', true) - u.valToPos(u.data[0][first], 'x', true));
	}
	return out;
})()`

// hover moves the mouse over the main chart at a share of its width and returns the tooltip.
func hover(t *testing.T, ctx context.Context, at float64) string {
	t.Helper()
	box, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = lens.chart.over.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`))
	require.NoError(t, err)
	require.Len(t, box, 4)
	x, y := box[0]+box[2]*at, box[1]+box[3]*0.5
	require.NoError(t, chromedp.Do(ctx, chromedp.MouseEvent(chromedp.MouseMoved, x-20, y), chromedp.MouseEvent(chromedp.MouseMoved, x, y)))
	tip, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => { const e = document.getElementById('tooltip'); return !e.hidden && e.innerText; })()`,
		chromedp.WithPollingTimeout(5*time.Second)))
	require.NoError(t, err, "no tooltip")
	return tip
}

// tooltipBytes reads a series' row of the tooltip ("RNIC(mlx5_0)[TX]: 2.465 GB/s") in bytes/s.
func tooltipBytes(t *testing.T, tip, label string) float64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(label) + `: (\d+(?:\.\d+)?) (B/s|kB/s|MB/s|GB/s|TB/s)`).FindStringSubmatch(tip)
	require.NotNil(t, m, "no %s in the tooltip %q", label, tip)
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	scale := map[string]float64{"B/s": 1, "kB/s": 1e3, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12}[m[2]]
	return v * scale
}

// chipValues reads the chips of a box ("rdma_share_of_network 0.999") as the page shows them.
func chipValues(t *testing.T, ctx context.Context, sel string) map[string]float64 {
	t.Helper()
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.innerText)`, sel+" .chip")))
	require.NoError(t, err)
	out := map[string]float64{}
	for _, s := range texts {
		name, val, ok := strings.Cut(strings.TrimSpace(s), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err == nil && !math.IsNaN(v) {
			out[name] = v
		}
	}
	require.NotEmpty(t, out, "no values in %s: %q", sel, texts)
	return out
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ''}).innerText`, sel)))
	require.NoError(t, err)
	return s
}

func rowText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.innerText)`, sel)))
	require.NoError(t, err)
	if len(rows) == 0 {
		t.Error(errors.New("no rows in " + sel))
	}
	return strings.Join(rows, "\n")
}

// contractMetrics is what the diagnosis connector (issue #13) sends for one node, with the
// receivers' bandwidth beside it: per second over the last 20 s, interconnect.io of the RNIC, the
// node-level diagnosis.verdict (healthy_gpudirect for the first 10 s, then tcp_fallback; 1 for
// the verdict that holds, 0 for the others), a device-level verdict and the evidence ratios.
func contractMetrics(host string, now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("host.name", host)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	io := ms.AppendEmpty()
	io.SetName("interconnect.io")
	sum := io.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	verdict := ms.AppendEmpty()
	verdict.SetName("diagnosis.verdict")
	vg := verdict.SetEmptyGauge()
	evidence := ms.AppendEmpty()
	evidence.SetName("diagnosis.evidence")
	eg := evidence.SetEmptyGauge()
	start := now.Add(-21 * time.Second)
	for i := range 20 {
		at := pcommon.NewTimestampFromTime(start.Add(time.Duration(i+1) * time.Second))
		dp := sum.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		dp.SetTimestamp(at)
		dp.SetIntValue(int64(i) * 2_000_000_000)
		dp.Attributes().PutStr("component", "rnic")
		dp.Attributes().PutStr("direction", "transmit")
		dp.Attributes().PutStr("device", "mlx5_0/1")
		holds := "healthy_gpudirect"
		if i >= 10 {
			holds = "tcp_fallback"
		}
		for _, v := range []string{"healthy_gpudirect", "tcp_fallback", "gpudirect_bounce", "fabric_congestion", "pfc_storm", "link_degraded", "gpudirect_not_ready", "idle"} {
			p := vg.DataPoints().AppendEmpty()
			p.SetTimestamp(at)
			p.Attributes().PutStr("verdict", v)
			p.Attributes().PutStr("device", "")
			if v == holds {
				p.SetIntValue(1)
			} else {
				p.SetIntValue(0)
			}
		}
		p := vg.DataPoints().AppendEmpty()
		p.SetTimestamp(at)
		p.SetIntValue(1)
		p.Attributes().PutStr("verdict", "link_degraded")
		p.Attributes().PutStr("device", "mlx5_0/1")
		for ratio, v := range map[string]float64{"rdma_share_of_network": 0.002, "cpu_pcie_per_network_byte": 2.01} {
			e := eg.DataPoints().AppendEmpty()
			e.SetTimestamp(at)
			e.SetDoubleValue(v)
			e.Attributes().PutStr("ratio", ratio)
			e.Attributes().PutStr("device", "")
		}
	}
	return md
}

// contractLog is the connector's record of the change to tcp_fallback.
func contractLog(host string, at time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("host.name", host)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.Body().SetStr("NCCL fell back to TCP: the RDMA NIC is idle while the netdev, the root complex and host memory carry the bytes; check NCCL_NET, NCCL_IB_DISABLE and NCCL_IB_HCA.")
	lr.Attributes().PutStr("verdict", "tcp_fallback")
	lr.Attributes().PutStr("previous_verdict", "healthy_gpudirect")
	lr.Attributes().PutStr("device", "")
	lr.Attributes().PutStr("evidence", "rdma_share_of_network=0.002 cpu_pcie_per_network_byte=2.01")
	return ld
}

func postOTLP(t *testing.T, endpoint, path string, body []byte) {
	t.Helper()
	resp, err := http.Post("http://"+endpoint+path, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
}

// TestLensViewBannerInBrowser sends the built collector, through its OTLP receiver, metrics and
// logs of the diagnosis connector's contract (the connector is issue #13's; this checks the
// view's side of the contract whether or not it is built in), and asserts on what Chromium shows:
// the banner names the verdict and its sentence and evidence, the device-level verdict is listed,
// and the history strip under the chart has one span per verdict, in order.
func TestLensViewBannerInBrowser(t *testing.T) {
	bin := collectorBinary(t)
	browser := chromiumBinary(t)
	otlp, view := freeAddr(t), freeAddr(t)
	startCollector(t, bin, fmt.Sprintf(`
receivers:
  otlp:
    protocols:
      http: {endpoint: %s}
exporters:
  lensview:
    endpoint: %s
service:
  pipelines:
    metrics: {receivers: [otlp], exporters: [lensview]}
    logs: {receivers: [otlp], exporters: [lensview]}
  telemetry: {metrics: {level: none}}
`, otlp, view))
	now := time.Now()
	mj, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(contractMetrics("contract-node1", now))
	require.NoError(t, err)
	lj, err := (&plog.JSONMarshaler{}).MarshalLogs(contractLog("contract-node1", now.Add(-11*time.Second)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		resp, err := http.Post("http://"+otlp+"/v1/metrics", "application/json", bytes.NewReader(mj))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 200*time.Millisecond, "the OTLP receiver did not answer")
	postOTLP(t, otlp, "/v1/logs", lj)

	ctx, blog := startBrowser(t, browser, 2*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/#node=contract-node1")))
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('verdict').dataset.verdict === 'tcp_fallback' &&
		document.querySelectorAll('#history .span').length > 0`, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	require.NoError(t, err, "banner: %q", text(t, ctx, "#verdict"))

	assert.Equal(t, "NCCL fell back to TCP (tcp_fallback)", text(t, ctx, "#verdict-name"))
	assert.Contains(t, text(t, ctx, "#verdict-sentence"), "check NCCL_NET, NCCL_IB_DISABLE")
	assert.Contains(t, text(t, ctx, "#verdict-devices"), "mlx5_0/1: Link trained down (link_degraded)")
	evidence := chipValues(t, ctx, "#evidence")
	assert.Equal(t, map[string]float64{"rdma_share_of_network": 0.002, "cpu_pcie_per_network_byte": 2.01}, evidence)

	type span struct {
		Verdict string  `json:"verdict"`
		Left    float64 `json:"left"`
		Width   float64 `json:"width"`
	}
	spans, err := chromedp.Run(ctx, chromedp.Evaluate[[]span](`[...document.querySelectorAll('#history .span')].map(e => {
		const r = e.getBoundingClientRect(); return {verdict: e.dataset.verdict, left: r.left, width: r.width}; })`))
	require.NoError(t, err)
	require.Len(t, spans, 2, "one span per verdict")
	assert.Equal(t, "healthy_gpudirect", spans[0].Verdict)
	assert.Equal(t, "tcp_fallback", spans[1].Verdict)
	assert.Greater(t, spans[0].Width, 10.0)
	assert.Greater(t, spans[1].Width, 10.0)
	assert.Less(t, spans[0].Left, spans[1].Left, "the strip reads left to right in time")
	assert.Contains(t, text(t, ctx, "#history-legend"), "Healthy GPUDirect RDMA")

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("ICLENS_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "banner.png"), shot, 0o644))
	t.Logf("screenshot: %s", filepath.Join(dir, "banner.png"))
	assertOnlyOwnHost(t, blog, view)
}
