package lensviewexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter/internal/metadata"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestDefaultConfig(t *testing.T) {
	cfg := loadConfig(t, "")
	assert.Equal(t, "127.0.0.1:9465", cfg.NetAddr.Endpoint, "loopback unless configured otherwise")
	assert.Equal(t, 30*time.Minute, cfg.Window)
	assert.Equal(t, time.Second, cfg.Resolution)
	assert.Equal(t, 5*time.Minute, cfg.NodeTimeout)
	assert.Equal(t, 2*time.Second, cfg.Refresh)
	assert.NoError(t, cfg.Validate())
}

func TestCustomConfig(t *testing.T) {
	cfg := loadConfig(t, "custom")
	assert.Equal(t, "0.0.0.0:19465", cfg.NetAddr.Endpoint)
	assert.Equal(t, 10*time.Minute, cfg.Window)
	assert.Equal(t, 5*time.Second, cfg.Resolution)
	assert.Equal(t, time.Minute, cfg.NodeTimeout)
	assert.Equal(t, 32, cfg.MaxNodes)
	assert.Equal(t, 64, cfg.MaxSeriesPerNode)
	assert.Equal(t, 5*time.Second, cfg.Refresh)
	assert.NoError(t, cfg.Validate())
}

func TestConfigErrorsNameTheField(t *testing.T) {
	err := loadConfig(t, "bad").Validate()
	require.Error(t, err)
	for _, field := range []string{"endpoint:", "resolution:", "window:", "node_timeout:", "max_nodes:", "max_series_per_node:", "refresh:"} {
		assert.Contains(t, err.Error(), field)
	}

	tooLong := createDefaultConfig().(*Config)
	tooLong.Window = 48 * time.Hour
	assert.ErrorContains(t, tooLong.Validate(), "raise resolution")
}
