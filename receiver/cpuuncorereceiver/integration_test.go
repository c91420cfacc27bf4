//go:build integration

package cpuuncorereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// These tests read the host they run on (its /sys and the real perf_event_open) and sleep: they
// run with -tags integration.

// The receiver as the collector runs it (factory, scraper controller, real perf_event_open) on a
// host without uncore PMUs (the VM fixture's sysfs, and this machine's own): it starts, says
// once why it has nothing, emits nothing, and stays up through many scrapes without an error.
func TestReceiverStaysUpWithoutUncore(t *testing.T) {
	for _, root := range []string{"testdata/vm", "/"} {
		t.Run(root, func(t *testing.T) {
			f := NewFactory()
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.CollectionInterval = minCollectionInterval
			cfg.RootPath, _ = filepath.Abs(root)
			if root == "/" && hasUncore() {
				t.Skip("this host has uncore PMUs")
			}
			core, logs := observer.New(zapcore.DebugLevel)
			set := receivertest.NewNopSettings(metadata.Type)
			set.Logger = zap.New(core)
			sink := new(consumertest.MetricsSink)
			r, err := f.CreateMetrics(t.Context(), set, cfg, sink)
			require.NoError(t, err)
			require.NoError(t, r.Start(t.Context(), componenttest.NewNopHost()))
			time.Sleep(5 * minCollectionInterval) // a few scrapes
			require.NoError(t, r.Shutdown(t.Context()))

			assert.Zero(t, sink.DataPointCount())
			var ours []string
			for _, e := range logs.All() {
				assert.Less(t, e.Level, zapcore.WarnLevel, "no warning or error: %s", e.Message)
				if e.Level == zapcore.InfoLevel {
					ours = append(ours, e.Message)
				}
			}
			require.Len(t, ours, 1, "%v", ours)
			assert.Equal(t, "Nothing to report: no usable uncore PMU", ours[0])
		})
	}
}

func hasUncore() bool {
	m, _ := filepath.Glob("/sys/bus/event_source/devices/uncore_imc*")
	a, _ := filepath.Glob("/sys/bus/event_source/devices/amd_umc_*")
	return len(m)+len(a) > 0
}

// The real host this test runs on: with the real perf_event_open source. On the development
// machines (no uncore PMU, often a VM) this checks the "nothing here" path end to end; on a host
// with uncore PMUs it checks that counters open and a scrape succeeds.
func TestRealHost(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	core, logs := observer.New(zapcore.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newScraper(cfg, set, liveOpener)
	require.NoError(t, s.start(t.Context(), nil))
	defer func() { assert.NoError(t, s.shutdown(t.Context())) }()
	md, err := s.scrape(t.Context())
	if len(s.plan.groups) == 0 {
		require.NoError(t, err)
		assert.Zero(t, md.DataPointCount())
		require.Equal(t, 1, logs.Len())
		assert.Equal(t, "Nothing to report: no usable uncore PMU", logs.All()[0].Message)
		t.Logf("this host: %v", logs.All()[0].ContextMap())
		return
	}
	t.Logf("this host has uncore PMUs: %v", messages(logs, zapcore.InfoLevel))
}
