package filestorageextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension"

import (
	"context"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension/internal/metadata"
)

// contrib is the wrapped factory: its configuration (filestorage.Config) is this extension's.
var contrib = filestorage.NewFactory()

// NewFactory creates a factory for the checked file_storage extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, contrib.CreateDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(ctx context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	inner, err := contrib.Create(ctx, set, cfg)
	if err != nil {
		return nil, err
	}
	se, ok := inner.(storage.Extension)
	if !ok { // contrib's file_storage always is one (extension.go: var _ storage.Extension)
		return inner, nil
	}
	return &checkedStorage{Extension: se, directory: cfg.(*filestorage.Config).Directory, logger: set.Logger}, nil
}
