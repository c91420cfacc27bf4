// Package natorder orders device names as people read them: mlx5_2 before mlx5_10, gpu9 before
// gpu10. Every place that shows or tie-breaks device names (discovery, nearest NIC, the view's
// tables) uses it, so that they agree.
package natorder // import "github.com/otelcol-iclens/otelcol-iclens/internal/natorder"

import (
	"cmp"
	"strings"
)

// Compare orders names with their digit runs compared as numbers: mlx5_2 before mlx5_10,
// as the DGX H100 compute NICs mlx5_0,3,4,5,6,9,10,11 (DGX H100 User Guide, "Network Modules")
// are meant to be read. Device order decides which of equally near NICs is a GPU's nearest.
func Compare(a, b string) int {
	if c := naturalOrder(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b) // mlx5_02 and mlx5_2: a total order all the same
}

func naturalOrder(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
