//go:build !linux || !cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"runtime"

	"go.uber.org/zap"
)

// openNVMLLibrary reports that NVML cannot be used: go-nvml loads libnvidia-ml.so.1 through cgo.
func openNVMLLibrary(*Config, *zap.Logger, quantitySet, func(string) int64) (source, error) {
	return nil, noGPUSupport(runtime.GOOS)
}

func openNVMLFallback(*Config, *zap.Logger, quantitySet, func(string) int64) (source, error) {
	return nil, noGPUSupport(runtime.GOOS)
}
