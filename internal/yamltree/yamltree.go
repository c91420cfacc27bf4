// Package yamltree reads a YAML file as a generic tree (maps, slices, scalars) and walks it by
// key: how the examples' static tests read manifests and collector configs without declaring
// their Go types.
package yamltree // import "github.com/otelcol-iclens/otelcol-iclens/internal/yamltree"

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Load reads the single YAML document of path as a map, failing the test where it cannot.
func Load(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(b, &m), path)
	return m
}

// Get walks nested maps: Get(m, "a", "b") is m["a"]["b"]; nil where a key is missing or a level
// is not a map.
func Get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
