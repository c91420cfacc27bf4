package captureextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/captureextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-iclens/otelcol-iclens/extension/captureextension/internal/metadata"
)

const (
	// Each recording is a few seconds of a node (a few MB compressed at 10 ms passes): 20 of them
	// are an incident's worth without watching the disk.
	defaultMaxFiles = 20
	// A verdict is re-raised at most every evaluation; one capture a minute keeps the first
	// burst of an incident and the next ones as it goes on.
	defaultMinInterval = time.Minute
)

// NewFactory creates a factory for the capture extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	return &Config{MaxFiles: defaultMaxFiles, MinInterval: defaultMinInterval}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newCaptureExtension(cfg.(*Config), set), nil
}
