package cpuuncorereceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	def := NewFactory().CreateDefaultConfig()
	sub, err := cm.Sub(component.NewID(metadata.Type).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(def))
	require.NoError(t, confmap.Validate(def))
	d := def.(*Config)
	assert.Equal(t, 5*time.Second, d.CollectionInterval)
	assert.Equal(t, "/", d.RootPath)
	assert.Equal(t, DomainConfig{Enabled: true, Granularity: GranularitySocket}, d.Memory)
	assert.Equal(t, PCIeConfig{DomainConfig: DomainConfig{Enabled: true, Granularity: GranularityStack}}, d.PCIe)
	assert.False(t, d.Metrics.CpuuncoreEventBytesPerCount.Enabled)

	cfg := NewFactory().CreateDefaultConfig()
	sub, err = cm.Sub(component.NewIDWithName(metadata.Type, "custom").String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	c := cfg.(*Config)
	assert.Equal(t, 2*time.Second, c.CollectionInterval)
	assert.Equal(t, "/hostfs", c.RootPath)
	assert.Equal(t, GranularityController, c.Memory.Granularity)
	assert.Equal(t, GranularityPort, c.PCIe.Granularity)
	assert.Equal(t, []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "event=0x05,umask=0xcf", Direction: "read", BytesPerCount: 64}}, c.Events)
	assert.True(t, c.Metrics.CpuuncoreEventBytesPerCount.Enabled)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"relative root", func(c *Config) { c.RootPath = "hostfs" }, `root_path "hostfs" must be an absolute path`},
		{"nothing enabled", func(c *Config) { c.Memory.Enabled, c.PCIe.Enabled = false, false }, "nothing to collect"},
		{"memory granularity", func(c *Config) { c.Memory.Granularity = "port" }, `memory.granularity "port"`},
		{"pcie granularity", func(c *Config) { c.PCIe.Granularity = "socket" }, `pcie.granularity "socket"`},
		{"interval", func(c *Config) { c.CollectionInterval = 0 }, "collection_interval must be positive"},
		{"event domain", func(c *Config) {
			c.Events = []EventConfig{{Domain: "disk", PMU: "uncore_imc", Event: "x", Direction: "read"}}
		}, `events[0]: domain "disk"`},
		{"event direction", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "x", Direction: "receive"}}
		}, `direction "receive": memory events are read or write`},
		{"pcie direction", func(c *Config) {
			c.Events = []EventConfig{{Domain: "pcie", PMU: "uncore_iio_free_running", Event: "x", Direction: "read"}}
		}, `pcie events are receive or transmit`},
		{"event pmu", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "../imc", Event: "x", Direction: "read"}}
		}, `pmu "../imc"`},
		{"event empty", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Direction: "read"}}
		}, "event is empty"},
		{"negative size", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "x", Direction: "read", BytesPerCount: -1}}
		}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := createDefaultConfig().(*Config)
			tc.edit(c)
			assert.ErrorContains(t, c.Validate(), tc.want)
		})
	}
	assert.NoError(t, createDefaultConfig().(*Config).Validate())
}
