package gpureceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoGPUSupport: a build without go-dcgm and go-nvml says why: no cgo on Linux, an
// unsupported platform elsewhere; either way the receiver stops looking for a library.
func TestNoGPUSupport(t *testing.T) {
	assert.Equal(t, errBuiltWithoutGPU, noGPUSupport("linux"))
	for _, goos := range []string{"darwin", "windows"} {
		err := noGPUSupport(goos)
		assert.ErrorIs(t, err, errUnsupportedPlatform)
		assert.ErrorIs(t, err, errBuiltWithoutGPU)
	}
}
