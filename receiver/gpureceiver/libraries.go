package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// openLibraries opens DCGM, else NVML, else amdgpu's sysfs tables, as the configuration allows.
func openLibraries(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
	if cfg.Source == sourceAMDGPU {
		return openAMDGPU(cfg.rootPath(), logger, want, numaNode, cfg.selects)
	}
	src, err := openNVIDIA(cfg, logger, want, numaNode)
	if err == nil || cfg.Source != sourceAuto {
		return src, err
	}
	// No NVIDIA library: an AMD Instinct node needs none (amdgpu's tables are in sysfs).
	amd, aerr := openAMDGPU(cfg.rootPath(), logger, want, numaNode, cfg.selects)
	if aerr != nil {
		return nil, errors.Join(err, fmt.Errorf("amdgpu: %w", aerr))
	}
	return amd, nil
}

// openNVIDIA opens DCGM, else NVML, as the configuration allows.
func openNVIDIA(cfg *Config, logger *zap.Logger, want quantitySet, numaNode func(string) int64) (source, error) {
	var errs []error
	if cfg.Source != sourceNVML {
		api, err := newDCGMAPI()
		if err == nil {
			var src *dcgmSource
			if src, err = openDCGM(api, cfg, logger, want, numaNode); err == nil {
				if cfg.Source == sourceDCGM {
					return src, nil
				}
				// DCGM is up; NVML fills in, per GPU, the link bytes DCGM cannot supply.
				return withNVMLFallback(src, logger, func() (source, error) {
					return openNVMLFallback(cfg, logger, want, numaNode)
				}), nil
			}
		}
		if errors.Is(err, errBuiltWithoutGPU) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("DCGM (%s mode, %s): %w", cfg.DCGM.Mode, cfg.DCGM.Endpoint, err))
	}
	if cfg.Source != sourceDCGM {
		src, err := openNVMLLibrary(cfg, logger, want, numaNode)
		if err == nil {
			if len(errs) > 0 {
				logger.Info("DCGM is not available, reading GPUs through NVML instead (no XIDs; DRAM, SM and engine activity only where the GPU has GPM)",
					zap.String("reason", errors.Join(errs...).Error()))
			}
			return src, nil
		}
		if errors.Is(err, errBuiltWithoutGPU) {
			return nil, err
		}
		errs = append(errs, fmt.Errorf("NVML: %w", err))
	}
	return nil, errors.Join(errs...)
}
