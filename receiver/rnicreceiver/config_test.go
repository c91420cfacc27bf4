package rnicreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := createDefaultConfig()
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg.(*Config), confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	cfg, err := loadConfig(t, "")
	require.NoError(t, err)
	assert.Equal(t, createDefaultConfig(), cfg)
	assert.Equal(t, 10*time.Second, cfg.CollectionInterval)
	assert.True(t, cfg.Ethtool.Enabled)
	assert.Equal(t, "/sys", cfg.sysRoot())
	assert.Equal(t, 10*time.Second, cfg.SlowInterval)
	assert.False(t, cfg.Topology.AllPairs, "each GPU's PIX/PXB and nearest pairs by default")

	cfg, err = loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, cfg.CollectionInterval)
	assert.Equal(t, time.Duration(0), cfg.SlowInterval)
	assert.Equal(t, "/hostfs/sys", cfg.sysRoot())
	assert.Equal(t, devicefilter.Match{Devices: []string{"mlx5_*", "rocep*"}, MatchType: devicefilter.Glob}, cfg.Include)
	assert.Equal(t, devicefilter.Match{Devices: []string{"mlx5_bond_0/2"}, MatchType: devicefilter.Strict}, cfg.Exclude)
	assert.False(t, cfg.Ethtool.Enabled)
	assert.True(t, cfg.Topology.AllPairs)
	assert.True(t, cfg.Metrics.RnicDriverCounter.Enabled)
	assert.False(t, cfg.Metrics.RnicPortInfo.Enabled)
	assert.True(t, cfg.Metrics.InterconnectIo.Enabled)

	assert.Equal(t, time.Duration(0), cfg.Bursts.Period, "the fast sampler is off by default")
	cfg, err = loadConfig(t, "bursts")
	require.NoError(t, err)
	captureID := component.MustNewIDWithName("capture", "fabric")
	assert.Equal(t, BurstsConfig{Period: 10 * time.Millisecond, Shares: []float64{0.25, 0.9}, Capture: &captureID, CaptureWindow: 3 * time.Second}, cfg.Bursts)

	// One message style: dotted.key: problem, got value.
	for name, want := range map[string]string{
		"bad_root":       `root_path: must be an absolute path, got "hostfs"`,
		"bad_pattern":    `include.devices: bad shell pattern, got "mlx5_["`,
		"bad_match_type": `exclude.match_type: must be one of strict, regexp, glob, got "prefix"`,
		"bad_slow":       "slow_interval: must not be negative, got -1s",
		"bad_timeout":    "read_timeout: must be at least 10ms, got 0s",
		"tiny_timeout":   "read_timeout: must be at least 10ms, got 1ns",
		"tiny_interval":  "collection_interval: must be at least 100ms, got 1ms",
		"bad_refresh":    "topology.refresh_interval: must not be negative, got -1m0s",

		"tiny_burst_period":               "bursts.period: must be 0 (off) or at least 10ms, got 1ms",
		"negative_burst_period":           "bursts.period: must not be negative, got -10ms",
		"burst_period_not_below_interval": "bursts.period: must be shorter than collection_interval (1s), got 1s",
		"bad_burst_share":                 "bursts.shares[1]: must be above 0 and at most 1, got 1.5",
		"many_burst_shares":               "bursts.shares: at most 4, got 5",
		"negative_capture_window":         "bursts.capture_window: must not be negative, got -5s",
		"long_capture_window":             "bursts.capture_window: must be at most 1m0s, got 2m0s",
	} {
		_, err = loadConfig(t, name)
		assert.ErrorContains(t, err, want, name)
	}
}

func TestSelects(t *testing.T) {
	cfg := &Config{Filter: devicefilter.Filter{
		Include: devicefilter.Match{Devices: []string{"mlx5_*"}, MatchType: devicefilter.Glob},
		Exclude: devicefilter.Match{Devices: []string{"mlx5_bond_0/2", "mlx5_9"}, MatchType: devicefilter.Strict},
	}}
	require.NoError(t, cfg.Filter.Validate())
	assert.True(t, cfg.selects("mlx5_bond_0", "1"))
	assert.False(t, cfg.selects("mlx5_bond_0", "2"), "a port can be excluded by device/port")
	assert.False(t, cfg.selects("mlx5_9", "1"), "exclusion wins")
	assert.False(t, cfg.selects("irdma0", "1"), "not included")
	assert.True(t, (&Config{}).selects("rxe0", "1"), "everything by default")
	assert.True(t, createDefaultConfig().(*Config).selects("rxe0", "1"), "everything by default")
}
