package ncclreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cm.Unmarshal(cfg))
	require.NoError(t, cfg.Validate())
	assert.Equal(t, 10*time.Second, cfg.CollectionInterval)
	assert.Equal(t, "/hostfs", cfg.RootPath)
	assert.Equal(t, "/var/lib/nccl-inspector", cfg.Inspector.DumpDir)
	assert.Equal(t, 500*time.Millisecond, cfg.Inspector.PollInterval)
	assert.True(t, cfg.Inspector.LocalHostOnly)
	require.NotNil(t, cfg.Inspector.Storage)
	assert.Equal(t, component.MustNewIDWithName("file_storage", "nccl"), *cfg.Inspector.Storage)
	assert.Equal(t, 64, cfg.Inspector.MaxCommunicators)
	assert.Equal(t, 5*time.Minute, cfg.Inspector.StaleAfter)
	assert.Equal(t, "localhost:28029", cfg.RAS.Endpoint)
	assert.Equal(t, 7*time.Second, cfg.RAS.Timeout)
	assert.False(t, cfg.Metrics.NcclCollectiveLastBusBandwidth.Enabled)
}

func TestDefaultConfigValid(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	assert.Equal(t, "localhost:28028", cfg.RAS.Endpoint, "NCCL_RAS_CLIENT_PORT, src/ras/ras_internal.h")
	assert.Empty(t, cfg.Inspector.DumpDir, "no dump directory is guessed")
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"root":          {func(c *Config) { c.RootPath = "hostfs" }, `root_path: must be an absolute path, got "hostfs"`},
		"dump dir":      {func(c *Config) { c.Inspector.DumpDir = "logs" }, `inspector.dump_dir: must be an absolute path, got "logs"`},
		"poll":          {func(c *Config) { c.Inspector.DumpDir = "/d"; c.Inspector.PollInterval = 0 }, "inspector.poll_interval: must be positive, got 0s"},
		"comms":         {func(c *Config) { c.Inspector.MaxCommunicators = 0 }, "inspector.max_communicators: must be positive, got 0"},
		"stale":         {func(c *Config) { c.Inspector.StaleAfter = -time.Second }, "inspector.stale_after: must not be negative, got -1s"},
		"endpoint":      {func(c *Config) { c.RAS.Endpoint = "localhost" }, `ras.endpoint: must be host:port, got "localhost"`},
		"timeout":       {func(c *Config) { c.RAS.Timeout = 0 }, "ras.timeout: must be positive, got 0s"},
		"timeout > int": {func(c *Config) { c.RAS.Timeout = time.Minute }, "ras.timeout: must be shorter than collection_interval (15s), got 1m0s"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tc.mutate(cfg)
			assert.ErrorContains(t, cfg.Validate(), tc.want)
		})
	}
}
