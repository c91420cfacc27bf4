// Package filedamage damages a file the ways a storage file is found damaged after a crash or a
// full disk, for the tests of the storage extension and of the built collector.
package filedamage // import "github.com/otelcol-iclens/otelcol-iclens/internal/filedamage"

import (
	"crypto/rand"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// Case is one way of damaging a file.
type Case struct {
	Name   string
	Damage func(t *testing.T, path string)
}

// Cases: truncated to 64 KiB (bbolt then panics rebuilding its freelist, db.go freepages) and
// overwritten at random (bbolt.Open: invalid database).
var Cases = []Case{
	{"truncated to 64 KiB", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 64<<10)) }},
	{"overwritten at random", func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		junk := make([]byte, fi.Size())
		_, _ = rand.Read(junk)
		require.NoError(t, os.WriteFile(path, junk, 0o600))
	}},
}
