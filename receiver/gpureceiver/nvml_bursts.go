//go:build linux && cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlBurstReader reads FI_DEV_PCIE_COUNT_TX/RX_BYTES (197/198) for the fast sampler (bursts.go):
// both fields of one GPU in one nvmlDeviceGetFieldValues call, into arrays of its own, through
// handles copied from the source when it was made. Its nvmlInit is its own hold on the library.
type nvmlBurstReader struct {
	lib      nvml.Interface
	devs     []gpuDevice
	handles  []nvml.Device
	fields   [][2]nvml.FieldValue
	released bool
}

// burstReader returns a reader of the GPUs as the last discovery found them. It takes a reference
// on NVML (nvmlInit is reference-counted, nvml.h nvmlShutdown; go-nvml counts its dlopen alike),
// which the reader's release gives back: the handles stay valid whatever the scrape closes.
func (s *nvmlSource) burstReader() (burstReader, error) {
	if ret := s.lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvmlInit for the fast sampler: %s", nvmlErr(ret))
	}
	return &nvmlBurstReader{lib: s.lib, devs: slices.Clone(s.devs), handles: slices.Clone(s.handles),
		fields: make([][2]nvml.FieldValue, len(s.handles))}, nil
}

func (r *nvmlBurstReader) devices() []gpuDevice { return r.devs }

func (r *nvmlBurstReader) read(i int, tx, rx *burstReading) error {
	f := &r.fields[i]
	f[0] = nvml.FieldValue{FieldId: nvml.FI_DEV_PCIE_COUNT_TX_BYTES}
	f[1] = nvml.FieldValue{FieldId: nvml.FI_DEV_PCIE_COUNT_RX_BYTES}
	*tx, *rx = burstReading{}, burstReading{}
	if ret := r.handles[i].GetFieldValues(f[:]); ret != nvml.SUCCESS {
		err := fmt.Errorf("nvmlDeviceGetFieldValues: %s", nvmlErr(ret))
		if ret == nvml.ERROR_NOT_SUPPORTED {
			err = fmt.Errorf("%w: %w", errBurstNotSupported, err)
		}
		return err
	}
	etx, erx := decodeBurstField(f[0], tx), decodeBurstField(f[1], rx)
	if etx == nil && erx == nil {
		return nil
	}
	return errors.Join(etx, erx)
}

// decodeBurstField decodes one counter as readCounters does (nvml.go): an unsigned value whose
// 32-bit value type makes it wrap at 2^32.
func decodeBurstField(fv nvml.FieldValue, out *burstReading) error {
	if ret := nvml.Return(fv.NvmlReturn); ret != nvml.SUCCESS {
		err := fmt.Errorf("NVML field %d: %s", fv.FieldId, nvmlErr(ret))
		if ret == nvml.ERROR_NOT_SUPPORTED {
			err = fmt.Errorf("%w: %w", errBurstNotSupported, err)
		}
		return err
	}
	v, ok := nvmlFieldUint(fv)
	if !ok {
		return fmt.Errorf("NVML field %d: unexpected value type %d", fv.FieldId, fv.ValueType)
	}
	*out = burstReading{ok: true, raw: v, tsUs: fv.Timestamp}
	if nvml.ValueType(fv.ValueType) == nvml.VALUE_TYPE_UNSIGNED_INT {
		out.bits = 32
	}
	return nil
}

func (r *nvmlBurstReader) release() {
	if r.released {
		return
	}
	r.released = true
	_ = r.lib.Shutdown()
}
