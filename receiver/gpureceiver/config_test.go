package gpureceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/devicefilter"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cm.Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, 5*time.Second, cfg.CollectionInterval)
	assert.Equal(t, modeStandalone, cfg.DCGM.Mode)
	assert.Equal(t, "unix:///run/nvidia-dcgm/hostengine.sock", cfg.DCGM.Endpoint)
	assert.Equal(t, 100*time.Millisecond, cfg.DCGM.SampleInterval)
	assert.Equal(t, sourceDCGM, cfg.Source)
	assert.Equal(t, "/hostfs", cfg.RootPath)
	assert.False(t, cfg.Metrics.GpuSmActive.Enabled)
	assert.False(t, cfg.selects(gpuDevice{name: "gpu1", busID: "0000:3b:00.0"}))
	assert.True(t, cfg.selects(gpuDevice{name: "gpu0", uuid: "GPU-1234", busID: "0000:1b:00.0"}))
}

func TestDefaultConfigValid(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	addr, sock, err := cfg.DCGM.initArgs()
	require.NoError(t, err)
	assert.Equal(t, [2]string{"localhost:5555", "0"}, [2]string{addr, sock})
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"source":            {func(c *Config) { c.Source = "rocm" }, `source: must be one of auto, dcgm, nvml, amdgpu, got "rocm"`},
		"mode":              {func(c *Config) { c.DCGM.Mode = "remote" }, `dcgm.mode: must be standalone or embedded, got "remote"`},
		"endpoint":          {func(c *Config) { c.DCGM.Endpoint = "localhost" }, `dcgm.endpoint: must be host:port`},
		"empty endpoint":    {func(c *Config) { c.DCGM.Endpoint = "" }, `dcgm.endpoint: must not be empty`},
		"relative socket":   {func(c *Config) { c.DCGM.Endpoint = "unix://run/x.sock" }, `dcgm.endpoint: unix socket path must be absolute, got "unix://run/x.sock"`},
		"sample too short":  {func(c *Config) { c.DCGM.SampleInterval = time.Millisecond }, "dcgm.sample_interval: must be at least 10ms, got 1ms"},
		"sample > interval": {func(c *Config) { c.DCGM.SampleInterval = time.Minute }, "dcgm.sample_interval: must not exceed collection_interval (10s), got 1m0s"},
		"retry":             {func(c *Config) { c.RetryInterval = 0 }, "retry_interval: must be positive, got 0s"},
		"root":              {func(c *Config) { c.RootPath = "hostfs" }, `root_path: must be an absolute path, got "hostfs"`},
		"pattern": {func(c *Config) {
			c.Exclude = devicefilter.Match{Devices: []string{"gpu["}, MatchType: devicefilter.Glob}
		}, `exclude.devices: bad shell pattern, got "gpu["`},
		"match type": {func(c *Config) { c.Include = devicefilter.Match{Devices: []string{"gpu0"}, MatchType: "fuzzy"} }, `include.match_type: must be one of strict, regexp, glob, got "fuzzy"`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tc.mutate(cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	cfg := createDefaultConfig().(*Config)
	cfg.DCGM.Mode = modeEmbedded
	cfg.DCGM.Endpoint = ""
	assert.NoError(t, cfg.Validate(), "embedded mode needs no endpoint")
	cfg.DCGM.Mode = modeStandalone
	cfg.DCGM.Endpoint = "tcp://10.0.0.1:5555"
	addr, sock, err := cfg.DCGM.initArgs()
	require.NoError(t, err)
	assert.Equal(t, "tcp://10.0.0.1:5555", addr)
	assert.Empty(t, sock, "a connection string goes to go-dcgm as it is")
}
