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
		{"relative root", func(c *Config) { c.RootPath = "hostfs" }, `root_path: must be an absolute path, got "hostfs"`},
		{"nothing enabled", func(c *Config) { c.Memory.Enabled, c.PCIe.Enabled = false, false }, "nothing to collect"},
		{"memory granularity", func(c *Config) { c.Memory.Granularity = "port" }, `memory.granularity: must be "socket" or "controller", got "port"`},
		{"pcie granularity", func(c *Config) { c.PCIe.Granularity = "socket" }, `pcie.granularity: must be "stack" or "port", got "socket"`},
		{"event domain", func(c *Config) {
			c.Events = []EventConfig{{Domain: "disk", PMU: "uncore_imc", Event: "x", Direction: "read"}}
		}, `events[0].domain: must be memory or pcie, got "disk"`},
		{"event direction", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "x", Direction: "receive"}}
		}, `events[0].direction: memory events are read or write, got "receive"`},
		{"pcie direction", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "x", Direction: "read"}, {Domain: "pcie", PMU: "uncore_iio_free_running", Event: "x", Direction: "read"}}
		}, `events[1].direction: pcie events are receive or transmit, got "read"`},
		{"event pmu", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "../imc", Event: "x", Direction: "read"}}
		}, `events[0].pmu: must be a PMU name such as uncore_imc, got "../imc"`},
		{"event empty", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Direction: "read"}}
		}, `events[0].event: must not be empty, got ""`},
		{"negative size", func(c *Config) {
			c.Events = []EventConfig{{Domain: "memory", PMU: "uncore_imc", Event: "x", Direction: "read", BytesPerCount: -1}}
		}, "events[0].bytes_per_count: must not be negative, got -1"},
		// issue #27: 1 ms and 1 ns were accepted without a word.
		{"interval 1ms", func(c *Config) { c.CollectionInterval = time.Millisecond }, "collection_interval: must be at least 100ms (every scrape reads every counter group), got 1ms"},
		{"interval 1ns", func(c *Config) { c.CollectionInterval = time.Nanosecond }, "collection_interval: must be at least 100ms (every scrape reads every counter group), got 1ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := createDefaultConfig().(*Config)
			tc.edit(c)
			assert.ErrorContains(t, c.Validate(), tc.want)
		})
	}
	assert.NoError(t, createDefaultConfig().(*Config).Validate())
	floor := createDefaultConfig().(*Config)
	floor.CollectionInterval = minCollectionInterval
	assert.NoError(t, floor.Validate(), "the floor itself is accepted")
}

// An empty root_path means the host's "/" (contrib hostmetrics' ValidateRootPath); on main it was
// refused.
func TestEmptyRootPathMeansHostRoot(t *testing.T) {
	c := createDefaultConfig().(*Config)
	c.RootPath = ""
	require.NoError(t, c.Validate())
	assert.Equal(t, "/sys/bus/event_source/devices", newHostPaths(c.RootPath).pmus)
}

// collection_interval is checked once, by scraperhelper's ControllerConfig.
func TestIntervalCheckedByController(t *testing.T) {
	c := createDefaultConfig().(*Config)
	c.CollectionInterval = 0
	assert.NoError(t, c.Validate(), "not the receiver's own check")
	assert.Error(t, confmap.Validate(c))
}
