package otelcoliclens_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
	"github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
)

// holdingVerdicts are the verdicts (verdict@device) the connector reports holding for host in a
// /metrics answer of the Prometheus exporter.
func holdingVerdicts(body, host string) []string {
	re := regexp.MustCompile(`verdict="([a-z_]+)"`)
	dev := regexp.MustCompile(`device="([^"]*)"`)
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "diagnosis_verdict_ratio{") || !strings.Contains(line, `host_name="`+host+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		m, d := re.FindStringSubmatch(line), dev.FindStringSubmatch(line)
		if err == nil && v == 1 && m != nil && d != nil {
			if d[1] == "" {
				out = append(out, m[1]) // node level, as scenario's Expect names it
			} else {
				out = append(out, scenario.On(m[1], d[1]))
			}
		}
	}
	return out
}

// TestLiveNCCLThroughCollector runs the demo's live feed (tools/simulate Live, what `make demo`
// runs as iclens-simulate -live) beside the built collector with the demo's configuration for
// the NCCL transitions: the Inspector dumps grow a record a sample and each node's RAS service
// (internal/fakeras) answers with the job's status at that sample, while the rnic, cpuuncore and
// gpu receivers replay the same cases' recordings. Before the fault sample both cases' nodes are
// healthy; from it, nccl_rank_dies's nodes are idle with their communicator stalled (RAS: a rank
// dead) and nccl_transition_tcp_fallback's on TCP with their AllReduce slow: what a replay of
// dumps written beforehand cannot show.
func TestLiveNCCLThroughCollector(t *testing.T) {
	bin := collectorBinary(t)
	// A minute and more of the feed's samples, one a second: it waits on the clock, beside the
	// outage tests (TestRemoteWriteOutage).
	t.Parallel()
	dir := t.TempDir()
	fixture := filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")
	cases := simulate.LiveNCCLCases()
	o := simulate.Options{Dir: dir, Interval: time.Second, Samples: scenario.TransitionFault + 60, UncoreFixture: fixture}
	_, err := simulate.WriteCases(o, cases)
	require.NoError(t, err)
	live, err := simulate.StartLive(o, cases)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, live.Close()) })
	src := simulate.NCCLSources{Cases: map[string]bool{}, RAS: live.RAS()}
	for _, c := range cases {
		src.Cases[c.Name] = true
	}
	cfg, err := simulate.CollectorConfigWithNCCL(dir, time.Second, simulate.ExportPrometheus, cases, src)
	require.NoError(t, err)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	addr := freeAddr(t)
	logs := startCollectorWith(t, bin, cfgPath, []string{"ICLENS_PROMETHEUS_ENDPOINT=" + addr, "ICLENS_LENSVIEW_ENDPOINT=" + freeAddr(t)})

	metrics := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The feed steps once a second, as iclens-simulate -live does, from when the collector's
	// replays have begun; the checks wait for the sample they are about, counted by the feed.
	step := func(upTo int) {
		t.Helper()
		for live.Sample() <= upTo {
			require.NoError(t, live.Step(time.Now()))
			time.Sleep(time.Second)
		}
	}
	want := func(phase int) map[string][]string {
		out := map[string][]string{}
		for _, c := range cases {
			for n, node := range scenario.Nodes {
				out[scenario.HostName(c, node)] = c.Phases[phase].Expect[n]
			}
		}
		return out
	}
	check := func(phase int, what string) {
		t.Helper()
		w := want(phase)
		var body string
		ok := assert.Eventually(t, func() bool {
			body = metrics()
			for host, v := range w {
				if !assert.ObjectsAreEqual(sorted(v), sorted(holdingVerdicts(body, host))) {
					return false
				}
			}
			return true
		}, 2*waitServed, 500*time.Millisecond, "%s (waited %s)", what, 2*waitServed)
		for host, v := range w {
			t.Logf("%s: %v, want %v", host, holdingVerdicts(body, host), v)
		}
		if !ok {
			t.Logf("collector log:\n%s", logs)
		}
	}
	require.Eventually(t, func() bool { return strings.Contains(metrics(), "diagnosis_verdict_ratio{") }, waitServed, 250*time.Millisecond,
		"the connector's verdicts were not served")
	step(20)
	check(0, "healthy before the fault")
	step(scenario.TransitionFault + 15)
	check(1, "from the fault: the stalled communicator and the TCP fallback")
	var stalled bool
	for _, v := range holdingVerdicts(metrics(), scenario.HostName(caseOf(t, cases, "nccl_rank_dies"), "node1")) {
		stalled = stalled || strings.HasPrefix(v, verdict.CollectiveStalled+"@")
	}
	assert.True(t, stalled, "RAS's dead rank stalls the communicator")
}

func caseOf(t *testing.T, cases []scenario.Case, name string) scenario.Case {
	t.Helper()
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return scenario.Case{}
}

func sorted(v []string) []string {
	out := append([]string(nil), v...)
	sort.Strings(out)
	return out
}
