package cpuuncorereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// TestRecordThenReplay records two scrapes of the SKX fixture (known counts from the fake source)
// and replays the file through the receiver: discovery runs on the recorded tree and the replayed
// interconnect.io values are the live ones.
func TestRecordThenReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-cpuuncore.jsonl")
	root, err := filepath.Abs(filepath.Join("testdata", "skx"))
	require.NoError(t, err)

	fake := newFakeOpener()
	w, err := recording.Create(file, recording.Header{Receiver: "cpuuncore", Interval: recording.Duration(5 * time.Second)})
	require.NoError(t, err)
	ro, err := newRecordingOpener(fake, root, w)
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	live := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), ro)
	require.NoError(t, live.start(t.Context(), nil))

	var liveIO []map[string]point
	for i := range 2 {
		fake.add(0, skxIMC0, skxCASRead, uint64(1000*(i+1)))
		fake.add(0, skxIMC0, skxCASWrite, 500)
		fake.add(28, skxFree0+2, bwIn0+0x300, 3)
		md, err := live.scrape(t.Context())
		require.NoError(t, err)
		require.NoError(t, ro.flush())
		liveIO = append(liveIO, ioPoints(t, md))
	}
	require.NoError(t, live.shutdown(t.Context()))
	require.NoError(t, w.Close())

	rec, err := recording.Open(file)
	require.NoError(t, err)
	require.Len(t, rec.Samples(), 2)
	assert.NotEmpty(t, rec.Records[0].Tree, "the host tree is recorded")

	rcfg := createDefaultConfig().(*Config)
	rcfg.Recording.Replay = file
	require.NoError(t, rcfg.Validate())
	sc, err := newRecordingScraper(rcfg, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	require.NoError(t, sc.Start(t.Context(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, sc.Shutdown(t.Context())) }()
	for i := range 2 {
		md, err := sc.ScrapeMetrics(t.Context())
		require.NoError(t, err)
		got := ioPoints(t, md)
		require.Len(t, got, len(liveIO[i]), "replay discovers the same series")
		for k, p := range liveIO[i] {
			assert.Equal(t, p.value, got[k].value, "scrape %d %s", i, k)
		}
	}
	assert.Equal(t, int64((1000+2000)*64), liveIO[1]["cpu_memory read socket0/imc  0"].value, "the fixture's counts came through")
}

func TestReplayRefusesOtherReceivers(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpu.jsonl")
	w, err := recording.Create(file, recording.Header{Receiver: "gpu"})
	require.NoError(t, err)
	require.NoError(t, w.Write(recording.Record{Time: time.Now(), Sample: []byte(`{}`)}))
	require.NoError(t, w.Close())
	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	_, err = openSeams(cfg)
	assert.ErrorContains(t, err, `of the "gpu" receiver, not cpuuncore`)
}

// TestReplayLoopKeepsCounting: a looping replay continues the counters from lap to lap (an open
// perf event never counts backwards), so the replayed traffic repeats instead of stopping.
func TestReplayLoopKeepsCounting(t *testing.T) {
	q := []recording.PerfReading{{Value: 100}, {Value: 150}, {Value: 230}}
	o := &replayOpener{names: map[uint32]string{7: "uncore_imc_0"}, loop: true, pos: map[eventKey]int{},
		queues: map[eventKey][]recording.PerfReading{{cpu: 0, pmu: "uncore_imc_0", config: 4}: q}}
	g, err := o.OpenGroup(0, []perf.Attr{{Type: 7, Config: 4}})
	require.NoError(t, err)
	var got []uint64
	for range 7 {
		r := perf.Reading{Values: make([]uint64, 1)}
		require.NoError(t, g.Read(&r))
		got = append(got, r.Values[0])
	}
	// Lap 2 starts one recorded step (50) after lap 1 ended, then repeats lap 1's increments.
	assert.Equal(t, []uint64{100, 150, 230, 280, 330, 410, 460}, got)

	o.loop, o.pos = false, map[eventKey]int{}
	for range 5 {
		r := perf.Reading{Values: make([]uint64, 1)}
		require.NoError(t, g.Read(&r))
		got = append(got[:0], r.Values[0])
	}
	assert.Equal(t, []uint64{230}, got, "without loop the last reading repeats")
}
