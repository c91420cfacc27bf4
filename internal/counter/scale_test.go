package counter

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestScaled: the values a 64-bit PMA counter can hold that do not fit an int64 point after the x4
// of its unit (Documentation/ABI/stable/sysfs-class-infiniband: port_xmit_data counts octets
// divided by 4) are refused, all ones included, instead of wrapping negative.
func TestScaled(t *testing.T) {
	for _, tc := range []struct {
		v, scale uint64
		want     int64
		ok       bool
	}{
		{85378896588, 4, 341515586352, true},
		{1<<61 - 1, 4, math.MaxInt64 - 3, true},
		{1 << 61, 4, 0, false},
		{math.MaxUint64, 4, 0, false},
		{math.MaxUint64, 1, 0, false},
		{math.MaxInt64, 1, math.MaxInt64, true},
		{1 << 63, 0, 0, false},
		{7, 0, 7, true},
	} {
		got, ok := Scaled(tc.v, tc.scale)
		assert.Equal(t, tc.ok, ok, "%d x %d", tc.v, tc.scale)
		assert.Equal(t, tc.want, got, "%d x %d", tc.v, tc.scale)
	}
}
