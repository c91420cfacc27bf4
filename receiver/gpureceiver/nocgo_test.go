//go:build !linux || !cgo

package gpureceiver

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver/internal/metadata"
)

// TestBuiltWithoutCgo: a CGO_ENABLED=0 build cannot use go-dcgm or go-nvml. The receiver still
// starts, says once that it was built without GPU support (and, on a node without AMD GPUs, that
// amdgpu's sysfs tables, which need no cgo, are absent too), and emits nothing.
func TestBuiltWithoutCgo(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = t.TempDir() // no /sys/class/drm
	core, logs := observer.New(zap.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newPatientScraper(cfg, set)
	clock := &testClock{t: time.Unix(1_800_000_000, 0)}
	s.now = clock.now
	require.NoError(t, s.start(context.Background(), nil))
	for i := 0; i < 20; i++ {
		clock.t = clock.t.Add(10 * time.Second)
		m, err := s.scrape(context.Background())
		require.NoError(t, err)
		assert.Zero(t, m.MetricCount())
	}
	msgs := logs.FilterMessage("No GPU metrics: no GPU library could be used; trying again later").All()
	require.Len(t, msgs, 1)
	assert.Contains(t, msgs[0].ContextMap()["reason"], noGPUSupport(runtime.GOOS).Error())
	assert.Contains(t, msgs[0].ContextMap()["reason"], "amdgpu: no AMD GPU")
	require.NoError(t, s.shutdown(context.Background()))
}
