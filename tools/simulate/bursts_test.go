package simulate

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/burst"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// TestBurstyCaseSubSamples: the bursty case's rnic recording carries, with every sample, the fast
// sampler's 100 readings at 10 ms of the port's PMA data counters and the netdev's bytes, the last
// at the sample's own time and equal to the sample's file; folded, they give the shape: the peak
// at line rate, 40 ms above 90 % per burst, the average of 40 ms in 600 ms. The fold starts at
// 1.2 s (a burst's start) and ends at 6 s: eight whole steps.
func TestBurstyCaseSubSamples(t *testing.T) {
	dir := t.TempDir()
	_, err := WriteCases(Options{Dir: dir, Interval: time.Second, Samples: 6,
		UncoreFixture: filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")}, scenario.BurstCases())
	require.NoError(t, err)
	rec, err := recording.Open(filepath.Join(dir, scenario.BurstCase, "node1-rnic.jsonl"))
	require.NoError(t, err)
	const xmit = "sys/class/infiniband/" + ibDev + "/ports/1/counters/port_xmit_data"
	f := burst.New(scenario.LineRate, []float64{0.9})
	from := rec.Samples()[0].Time.Add(200 * time.Millisecond) // 1.2 s after the recording's start
	var first, last uint64
	seen := false
	for n, s := range rec.Samples() {
		var rs recording.RNICSample
		require.NoError(t, json.Unmarshal(s.Sample, &rs))
		subs := rs.Bursts
		require.Equal(t, 100, subs.Len(), "sample %d", n)
		assert.Equal(t, recording.Duration(10*time.Millisecond), subs.Period)
		assert.True(t, subs.Time(subs.Len()-1).Equal(s.Time), "the last pass is the sample's own time")
		for i := range subs.Len() {
			v, ok := subs.Value(i, xmit)
			require.True(t, ok)
			last = v
			if subs.Time(i).Before(from) {
				continue
			}
			f.Add(burst.Sample{T: subs.Time(i), Bytes: 4 * v})
			if !seen {
				first, seen = v, true
			}
		}
		file, err := strconv.ParseUint(strings.TrimSpace(s.Files[xmit]), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, file, last, "sample %d: the file and the last pass agree", n)
	}
	iv := f.Take()
	assert.InEpsilon(t, scenario.LineRate, iv.Peak, 1e-6)
	const span, steps = 4800 * time.Millisecond, 8
	assert.InDelta(t, 0.040, f.Above()[0].Seconds()/steps, 1e-9, "time above 90 %% per burst")
	avg := float64(4*(last-first)) / span.Seconds()
	assert.InEpsilon(t, scenario.JANOGStep.Average(), avg, 0.01)
}
