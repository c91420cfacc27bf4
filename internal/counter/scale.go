package counter

import (
	"math"
	"math/bits"
)

// Scaled returns value*scale as the int64 an OpenTelemetry integer point holds, and false when it
// cannot hold it: a 64-bit PMA data counter at or above 2^61 times its 4-octet unit, or any
// reading above 2^63-1 (all ones on a 64-bit counter would otherwise be served as -1, or -4 after
// scaling). Such a value is not a count anyone can use; the caller flags it instead of reporting
// it. A scale of 0 is taken as 1.
func Scaled(value, scale uint64) (int64, bool) {
	if scale == 0 {
		scale = 1
	}
	hi, lo := bits.Mul64(value, scale)
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}
