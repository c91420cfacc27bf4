package diagnosisconnector

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
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
	for _, v := range verdict.Names() {
		assert.True(t, cfg.enabled(v), v)
	}
}

func TestConfigCustom(t *testing.T) {
	cfg := loadConfig(t, "custom")
	require.NoError(t, cfg.Validate())
	assert.Equal(t, time.Second, cfg.Interval)
	assert.Equal(t, 3, cfg.Hold)
	assert.Equal(t, 0.1, cfg.Thresholds.BusyLineShare)
	assert.Equal(t, 0.01, cfg.Thresholds.CongestionMinMarksPerPacket)
	assert.Equal(t, defaultThresholds().MinRDMAShare, cfg.Thresholds.MinRDMAShare, "unset thresholds keep their default")
	assert.False(t, cfg.enabled(verdict.Idle))
	assert.True(t, cfg.enabled(verdict.TCPFallback))
	assert.False(t, cfg.Metrics.DiagnosisEvidence.Enabled)
}

func TestConfigValidateRejectsNonsense(t *testing.T) {
	for name, want := range map[string][]string{
		"short_window": {"window: must be at least two intervals (20s): a rate needs two samples, got 15s"},
		"overlapping": {
			"thresholds::fallback_max_rdma_share: must be below min_rdma_share (0.5): a node cannot be both TCP and RDMA, got 0.6",
			"thresholds::healthy_max_path_write_per_rdma_byte: must be below bounce_min_path_write_per_rdma_byte (0.25): a node cannot be both healthy and bouncing, got 0.3",
		},
		"nonsense": {
			"hold: must be at least 1 evaluation, got 0",
			"max_nodes: must be at least 1, got 0",
			"thresholds::busy_line_share: must be a share in (0, 1], got 1.5",
			"thresholds::storm_min_pause_frames_per_gbps: must be positive, got -1",
			"thresholds::straggler_min_bus_bandwidth_ratio: must be above 1 (equal bus bandwidths are no straggler), got 1",
			"verdicts: unknown verdict (known: healthy_gpudirect, tcp_fallback, gpudirect_bounce, fabric_congestion, pfc_storm, link_degraded, gpudirect_not_ready, idle, collective_slow, collective_stalled, straggler, waits_on_peer), got tcp_fallbak",
		},
	} {
		err := loadConfig(t, name).Validate()
		require.Error(t, err, name)
		for _, w := range want {
			assert.ErrorContains(t, err, w, name)
		}
		// Every message is "key: problem, got value", as the receivers' are.
		for _, line := range strings.Split(err.Error(), "\n") {
			assert.Regexp(t, `^[a-z_:]+: .+, got .+$`, line, name)
		}
	}
}
