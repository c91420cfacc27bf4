package deliverywatchextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension/internal/metadata"
)

// TestLoadConfig reads testdata/config.yaml as the collector does (confmaptest, as contrib's
// healthcheckextension config_test.go).
func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	storageID := component.MustNewID("file_storage")
	tuned := createDefaultConfig().(*Config)
	tuned.Endpoint = "https://127.0.0.1:8889/metrics"
	tuned.Timeout = 2 * time.Second
	tuned.Headers = configopaque.MapList{{Name: "X-Scope", Value: "node-agent"}}
	tuned.CheckInterval, tuned.GrowingChecks, tuned.Storage = 5*time.Second, 2, &storageID

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr []string
	}{
		{id: component.NewID(metadata.Type), want: createDefaultConfig().(*Config)},
		{id: component.NewIDWithName(metadata.Type, "tuned"), want: tuned},
		{id: component.NewIDWithName(metadata.Type, "bad"), wantErr: []string{
			`endpoint: must be an http(s) URL, got "127.0.0.1:8888"`,
			"timeout: must not be negative, got -1s",
			"check_interval: must be positive, got 0s",
			"growing_checks: must be at least 1, got 0",
		}},
	} {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != nil {
				for _, want := range tt.wantErr {
					assert.ErrorContains(t, err, want)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestReadTimeout(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.CheckInterval = 10 * time.Second
	assert.Equal(t, 10*time.Second, cfg.readTimeout(), "0: check_interval")
	cfg.Timeout = 3 * time.Second
	assert.Equal(t, 3*time.Second, cfg.readTimeout())
	cfg.Timeout = time.Minute
	assert.Equal(t, 10*time.Second, cfg.readTimeout(), "never longer than check_interval")
}
