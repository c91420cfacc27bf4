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

// The receiver as the collector runs it (factory, scraper controller, real perf_event_open) on a
// host without uncore PMUs (the VM fixture's sysfs, and this machine's own): it starts, says
// once why it has nothing, emits nothing, and stays up through many scrapes without an error.
func TestReceiverStaysUpWithoutUncore(t *testing.T) {
	for _, root := range []string{"testdata/vm", "/"} {
		t.Run(root, func(t *testing.T) {
			f := NewFactory()
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.CollectionInterval = 20 * time.Millisecond
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
			time.Sleep(300 * time.Millisecond)
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
			assert.Contains(t, ours[0], "no usable")
		})
	}
}

func hasUncore() bool {
	m, _ := filepath.Glob("/sys/bus/event_source/devices/uncore_imc*")
	a, _ := filepath.Glob("/sys/bus/event_source/devices/amd_umc_*")
	return len(m)+len(a) > 0
}
