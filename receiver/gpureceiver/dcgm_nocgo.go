//go:build !linux || !cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import "runtime"

// newDCGMAPI reports that DCGM cannot be used: go-dcgm is a cgo package (it does not compile with
// CGO_ENABLED=0) and exists for Linux only. On another OS the receiver logs once that the
// platform is unsupported, and stays quiet.
func newDCGMAPI() (dcgmAPI, error) { return nil, noGPUSupport(runtime.GOOS) }
