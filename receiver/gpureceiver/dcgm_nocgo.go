//go:build !linux || !cgo

package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

// newDCGMAPI reports that DCGM cannot be used: go-dcgm is a cgo package (it does not compile with
// CGO_ENABLED=0) and exists for Linux only.
func newDCGMAPI() (dcgmAPI, error) { return nil, errBuiltWithoutGPU }
