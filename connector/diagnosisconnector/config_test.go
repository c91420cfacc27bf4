package diagnosisconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.MustNewIDWithName("diagnosis", name).String())
	require.NoError(t, err)
	cfg := createDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestConfigDefaultIsValid(t *testing.T) {
	cfg := loadConfig(t, "")
	assert.Equal(t, createDefaultConfig(), cfg)
	require.NoError(t, cfg.Validate())
	for _, v := range Verdicts() {
		assert.True(t, cfg.Enabled(v), v)
	}
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, cfg.Validate())
	assert.Equal(t, time.Second, cfg.Interval)
	assert.Equal(t, 3, cfg.Hold)
	assert.Equal(t, 0.1, cfg.Thresholds.BusyLineShare)
	assert.Equal(t, 0.01, cfg.Thresholds.CongestionMinMarksPerPacket)
	assert.Equal(t, DefaultThresholds().MinRDMAShare, cfg.Thresholds.MinRDMAShare, "unset thresholds keep their default")
	assert.False(t, cfg.Enabled(Idle))
	assert.True(t, cfg.Enabled(TCPFallback))
	assert.False(t, cfg.Metrics.DiagnosisEvidence.Enabled)
}

func TestConfigValidateRejectsNonsense(t *testing.T) {
	for name, want := range map[string][]string{
		"short_window": {"window (15s) must be at least two intervals (20s)"},
		"overlapping": {
			"fallback_max_rdma_share (0.6) must be below min_rdma_share (0.5)",
			"healthy_max_path_write_per_rdma_byte (0.3) must be below bounce_min_path_write_per_rdma_byte (0.25)",
		},
		"nonsense": {
			"hold must be at least 1",
			"max_nodes must be at least 1",
			"thresholds::busy_line_share must be a share in (0, 1], not 1.5",
			"thresholds::storm_min_pause_frames_per_gbps must be positive, not -1",
			"verdicts: unknown tcp_fallbak",
		},
	} {
		err := loadConfig(t, name).Validate()
		require.Error(t, err, name)
		for _, w := range want {
			assert.ErrorContains(t, err, w, name)
		}
	}
}
