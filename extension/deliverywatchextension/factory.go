package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/extension"

	"github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension/internal/metadata"
)

const (
	defaultEndpoint      = "http://127.0.0.1:8888/metrics"
	defaultCheckInterval = 10 * time.Second
	// Three checks (30 s) of a growing queue: longer than a batch's wait and a few retries.
	defaultGrowingChecks = 3
)

// NewFactory creates a factory for the delivery_watch extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	client.Endpoint = defaultEndpoint
	return &Config{ClientConfig: client, CheckInterval: defaultCheckInterval, GrowingChecks: defaultGrowingChecks}
}

func createExtension(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newDeliveryWatch(cfg.(*Config), set), nil
}
