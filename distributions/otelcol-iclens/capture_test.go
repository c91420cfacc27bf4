package otelcoliclens_test

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// TestCaptureOnVerdictAndFromTheView runs the demo's configuration (iclens-simulate: every rnic,
// cpuuncore and gpu receiver with bursts.capture, the capture extension, the diagnosis connector and
// the view naming it) over the simulator's bursty cases through the built collector. When the
// connector raises fabric_congestion on bursty_congestion (TestCongestionInBurstsThroughCollector)
// the extension writes the receivers' rings, the verdict's sentence as their note; pressing Capture in the
// view (headless Chromium) writes them again, "on demand from the view", and the page names the
// files. Each is a recording of the last seconds at full resolution: the 10 ms passes of the
// replayed port, whose fastest window is the line rate that the 1 s averages never show.
func TestCaptureOnVerdictAndFromTheView(t *testing.T) {
	browser := chromiumBinary(t)
	dir := t.TempDir()
	captures, view := filepath.Join(dir, "captures"), freeAddr(t)
	// min_interval 0: the verdict's capture and the button's both write, however close together.
	logs := startBurstCasesAsDemo(t, dir, "ICLENS_PROMETHEUS_ENDPOINT="+freeAddr(t), "ICLENS_LENSVIEW_ENDPOINT="+view,
		"ICLENS_CAPTURE_DIR="+captures, "ICLENS_CAPTURE_MIN_INTERVAL=0s")

	ring := "rnic_" + scenario.BurstCongestionCase + "-node1"
	// The verdict's capture: the congested node's ring, noted with the verdict's sentence.
	var onVerdict string
	deadline := time.Now().Add(4 * waitServed)
	for onVerdict == "" {
		require.True(t, time.Now().Before(deadline), "no capture noted with fabric congestion in %s within %s; collector log:\n%s", captures, 4*waitServed, logs)
		matches, _ := filepath.Glob(filepath.Join(captures, "*-"+ring+".jsonl.gz"))
		for _, m := range matches {
			if rec, err := recording.Open(m); err == nil && strings.Contains(rec.Header.Note, "fabric congestion") {
				onVerdict = m
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	assertCapturedBursts(t, onVerdict)
	// The same trigger wrote the node's cpuuncore and gpu rings beside it, with the same note: the
	// host's and the GPUs' side of the same seconds (the simulated uncore and GPU recordings have
	// no passes, only scrapes).
	note := mustOpen(t, onVerdict).Header.Note
	for _, receiver := range []string{"cpuuncore", "gpu"} {
		ring := receiver + "_" + scenario.BurstCongestionCase + "-node1"
		var kept *recording.Recording
		for deadline := time.Now().Add(waitServed); kept == nil; time.Sleep(250 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "no %s capture noted with fabric congestion in %s", receiver, captures)
			matches, _ := filepath.Glob(filepath.Join(captures, "*-"+ring+".jsonl.gz"))
			for _, m := range matches {
				if rec, err := recording.Open(m); err == nil && rec.Header.Note == note {
					kept = rec
				}
			}
		}
		assert.Equal(t, receiver, kept.Header.Receiver)
		assert.NotEmpty(t, kept.Samples(), "%s: the scrapes of the window", receiver)
	}

	ctx, blog := startBrowser(t, browser, 3*time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+view+"/")))
	// The button shows once the page knows capture is set (GET /api/capture); a real click.
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById('capture').hidden`,
		chromedp.WithPollingTimeout(waitServed), chromedp.WithPollingInterval(100*time.Millisecond)))
	require.NoError(t, err, "the Capture button is not shown")
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.getElementById('capture').click(); return true; })()`))
	require.NoError(t, err)
	_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById('capture-result').textContent.startsWith('captured: ')`,
		chromedp.WithPollingTimeout(waitServed), chromedp.WithPollingInterval(100*time.Millisecond)))
	said := text(t, ctx, "#capture-result")
	require.NoError(t, err, "the page did not say the capture; it says %q", said)
	m := regexp.MustCompile(`[^ ,]*-` + regexp.QuoteMeta(ring) + `(\.[0-9]+)?\.jsonl\.gz`).FindString(said)
	require.NotEmpty(t, m, "the page names the congested node's capture: %q", said)
	rec, err := recording.Open(m)
	require.NoError(t, err)
	assert.Equal(t, "on demand from the view", rec.Header.Note)
	assertCapturedBursts(t, m)
	assertOnlyOwnHost(t, blog, view)
}

// assertCapturedBursts checks that the capture at path is an rnic recording whose samples carry
// the fast sampler's 10 ms passes, the port's fastest window within 5 % of the line rate.
func assertCapturedBursts(t *testing.T, path string) {
	t.Helper()
	rec, err := recording.Open(path)
	require.NoError(t, err)
	assert.Equal(t, "rnic", rec.Header.Receiver)
	require.NotEmpty(t, rec.Samples())
	var peak float64
	passes := 0
	for _, s := range rec.Samples() {
		var rs recording.RNICSample
		require.NoError(t, json.Unmarshal(s.Sample, &rs))
		if rs.Bursts == nil {
			continue
		}
		assert.Equal(t, recording.Duration(10*time.Millisecond), rs.Bursts.Period)
		passes += rs.Bursts.Len()
		for file := range rs.Bursts.Files {
			if !strings.HasSuffix(file, "/ports/1/counters/port_xmit_data") {
				continue
			}
			for i := 1; i < rs.Bursts.Len(); i++ {
				a, aok := rs.Bursts.Value(i-1, file)
				b, bok := rs.Bursts.Value(i, file)
				if aok && bok && b >= a {
					peak = max(peak, float64(b-a)*4/rs.Bursts.Time(i).Sub(rs.Bursts.Time(i-1)).Seconds())
				}
			}
		}
	}
	require.Positive(t, passes, "the capture %s carries the 10 ms passes", path)
	assert.InEpsilon(t, scenario.LineRate, peak, 0.05, "%s: the fastest 10 ms window of %d passes", path, passes)
	t.Logf("%s: %d passes, peak %.4g B/s", filepath.Base(path), passes, peak)
}

func mustOpen(t *testing.T, path string) *recording.Recording {
	t.Helper()
	rec, err := recording.Open(path)
	require.NoError(t, err)
	return rec
}
