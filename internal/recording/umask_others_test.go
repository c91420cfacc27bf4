//go:build !unix

package recording

import "testing"

// setUmask: there is no umask off Unix (Windows); a test that depends on one is skipped.
func setUmask(t *testing.T, _ int) { t.Skip("no umask on this platform") }
