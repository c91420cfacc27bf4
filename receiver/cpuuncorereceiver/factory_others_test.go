//go:build !linux

package cpuuncorereceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// Off Linux the receiver starts, says once that the platform is unsupported, and reports nothing.
func TestUnsupportedPlatform(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	s := newScraper(createDefaultConfig().(*Config), set, liveOpener)
	require.NoError(t, s.start(t.Context(), nil))
	for range 3 {
		md, err := s.scrape(t.Context())
		require.NoError(t, err)
		assert.Zero(t, md.DataPointCount())
	}
	require.NoError(t, s.shutdown(t.Context()))
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].Message, "Unsupported platform")
}
