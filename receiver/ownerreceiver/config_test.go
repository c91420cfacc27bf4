package ownerreceiver

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
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
	assert.ErrorContains(t, err, "turn at least one source on", "a receiver with no source says so at start-up")
	assert.Equal(t, createDefaultConfig(), cfg)

	cfg, err = loadConfig(t, "slurm_only")
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, cfg.CollectionInterval)
	assert.Equal(t, 5*time.Second, cfg.RefreshInterval)
	assert.Equal(t, "/run/slurm/gpu-jobs", cfg.Slurm.MappingDir)

	cfg, err = loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, "/hostfs", cfg.RootPath)
	assert.Equal(t, 2*time.Second, cfg.RefreshInterval)
	assert.Equal(t, owner.KubernetesConfig{Enabled: true, Socket: owner.DefaultPodResourcesSocket, Timeout: time.Second,
		GPUResources: []string{"nvidia.com/gpu", "nvidia.com/gpu.shared"}, MaxDevicesPerPod: 64}, cfg.Kubernetes)
	assert.Equal(t, []string{"SLURM_JOB_ID", "PBS_JOBID"}, cfg.Process.JobIDEnv)
	assert.Equal(t, "SLURM_JOB_USER", cfg.Process.UserEnv, "defaults kept beside what is set")
	assert.Equal(t, owner.StaticConfig{Enabled: true, Path: "/etc/otelcol-iclens/owners.yaml"}, cfg.Static)

	for name, want := range map[string][]string{
		"bad_refresh":    {"refresh_interval: must be at most collection_interval (10s), got 30s"},
		"bad_root":       {`root_path: must be an absolute path, got "hostfs"`},
		"slurm_no_dir":   {`slurm.mapping_dir: must be set, got ""`},
		"bad_kubernetes": {`kubernetes.socket: must be set, got ""`, "kubernetes.max_devices_per_pod: must be positive, got 0"},
	} {
		_, err = loadConfig(t, name)
		for _, w := range want {
			assert.ErrorContains(t, err, w, name)
		}
	}
}
