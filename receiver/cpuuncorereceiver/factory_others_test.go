package cpuuncorereceiver

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// Off Linux the receiver starts, says once that the platform is unsupported, and reports nothing.
// The live source of darwin and windows (factory_others.go) is unsupportedOpener; it is driven
// here on every platform, and liveOpener itself where the test runs off Linux.
func TestUnsupportedPlatform(t *testing.T) {
	openers := map[string]func() (perf.Opener, error){"unsupportedOpener": unsupportedOpener}
	if runtime.GOOS != "linux" {
		openers["liveOpener"] = liveOpener
	}
	for name, open := range openers {
		t.Run(name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			set := receivertest.NewNopSettings(metadata.Type)
			set.Logger = zap.New(core)
			s := newScraper(createDefaultConfig().(*Config), set, open)
			require.NoError(t, s.start(t.Context(), nil))
			for range 3 {
				md, err := s.scrape(t.Context())
				require.NoError(t, err)
				assert.Zero(t, md.DataPointCount())
			}
			require.NoError(t, s.shutdown(t.Context()))
			require.Equal(t, 1, logs.Len(), "one line for three scrapes: %v", logs.All())
			assert.Contains(t, logs.All()[0].Message, "Unsupported platform")
		})
	}
}

// A replay needs no perf_event_open: where the live source is unsupported, a recording of the SKX
// fixture (the fake source's known counts, as in TestRecordThenReplay) is still read and scraped
// to the recorded values (README, "replay them anywhere").
func TestUnsupportedPlatformStillReplays(t *testing.T) {
	file := filepath.Join(t.TempDir(), "node1-cpuuncore.jsonl")
	live := newTestScraper(t, "skx", func(c *Config) { c.Recording.Write = file })
	live.fake.add(0, skxIMC0, skxCASRead, 1000)
	live.tick(5 * time.Second)
	md, err := live.scrape(t.Context())
	require.NoError(t, err)
	want := ioPoints(t, md)
	require.NoError(t, live.shutdown(t.Context()))
	require.NotEmpty(t, want)

	cfg := createDefaultConfig().(*Config)
	cfg.Recording.Replay = file
	s := newScraper(cfg, receivertest.NewNopSettings(metadata.Type), unsupportedOpener)
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { require.NoError(t, s.shutdown(t.Context())) }()
	md, err = s.scrape(t.Context())
	require.NoError(t, err)
	got := ioPoints(t, md)
	require.Len(t, got, len(want), "the replay discovers the recorded series")
	for k, p := range want {
		assert.Equal(t, p.value, got[k].value, "%s", k)
	}
}
