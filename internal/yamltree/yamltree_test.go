package yamltree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLoadAndGet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(path, []byte("a:\n  b: [1, 2]\n  c: {d: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := Load(t, path)
	assert.Equal(t, []any{1, 2}, Get(m, "a", "b"))
	assert.Equal(t, "x", Get(m, "a", "c", "d"))
	assert.Nil(t, Get(m, "a", "missing", "d"))
	assert.Nil(t, Get(m, "a", "b", "c"), "a slice is no map")
}
