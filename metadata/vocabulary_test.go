package metadata

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReceiversFollowVocabulary loads every receiver's metadata.yaml and checks that whatever it
// says about interconnect.io and the shared attributes agrees with vocabulary.yaml.
func TestReceiversFollowVocabulary(t *testing.T) {
	vocab, err := Load()
	require.NoError(t, err)

	files, err := filepath.Glob(filepath.Join("..", "receiver", "*", "metadata.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no receiver metadata.yaml found")

	for _, file := range files {
		t.Run(filepath.Base(filepath.Dir(file)), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			md, err := Parse(data)
			require.NoError(t, err)
			for _, problem := range Check(vocab, md) {
				t.Errorf("%s: %s", file, problem)
			}
		})
	}
}

// TestCheckFindsDifferences makes sure the consistency check itself can fail.
func TestCheckFindsDifferences(t *testing.T) {
	vocab, err := Load()
	require.NoError(t, err)

	good := cloneShared(vocab)
	assert.Empty(t, Check(vocab, good))

	cases := map[string]func(v *Vocabulary){
		"unit": func(v *Vocabulary) {
			m := v.Metrics["interconnect.io"]
			m.Unit = "KiBy"
			v.Metrics["interconnect.io"] = m
		},
		"gauge": func(v *Vocabulary) { m := v.Metrics["interconnect.io"]; m.Sum = nil; v.Metrics["interconnect.io"] = m },
		"monotonic": func(v *Vocabulary) {
			m := v.Metrics["interconnect.io"]
			s := *m.Sum
			s.Monotonic = false
			m.Sum = &s
			v.Metrics["interconnect.io"] = m
		},
		"attribute set": func(v *Vocabulary) {
			m := v.Metrics["interconnect.io"]
			m.Attributes = []string{"component", "direction"}
			v.Metrics["interconnect.io"] = m
		},
		"enum value": func(v *Vocabulary) {
			a := v.Attributes["component"]
			a.Enum = []string{"rnic", "nic"}
			v.Attributes["component"] = a
		},
		"type": func(v *Vocabulary) { a := v.Attributes["numa.node"]; a.Type = "string"; v.Attributes["numa.node"] = a },
		"description": func(v *Vocabulary) {
			a := v.Attributes["device"]
			a.Description = "something"
			v.Attributes["device"] = a
		},
		"renamed": func(v *Vocabulary) {
			a := v.Attributes["direction"]
			a.NameOverride = "network.io.direction"
			v.Attributes["direction"] = a
		},
		"missing attr": func(v *Vocabulary) { delete(v.Attributes, "pci.bus_id") },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			md := cloneShared(vocab)
			mutate(md)
			assert.NotEmpty(t, Check(vocab, md), "a changed %s must be reported", name)
		})
	}
}

func TestSemconvMappingDocumented(t *testing.T) {
	vocab, err := Load()
	require.NoError(t, err)
	for name := range vocab.Metrics {
		assert.NotEmpty(t, vocab.Semconv[name], "metric %s has no semantic-convention note", name)
	}
	for name := range vocab.Attributes {
		if name == "component" {
			continue // our own enum, described inline
		}
		assert.NotEmpty(t, vocab.Semconv[name], "attribute %s has no semantic-convention note", name)
	}
}

func cloneShared(v *Vocabulary) *Vocabulary {
	out := &Vocabulary{Metrics: map[string]Metric{}, Attributes: map[string]Attribute{}}
	for k, m := range v.Metrics {
		if m.Sum != nil {
			s := *m.Sum
			m.Sum = &s
		}
		m.Attributes = slices.Clone(m.Attributes)
		out.Metrics[k] = m
	}
	for k, a := range v.Attributes {
		a.Enum = slices.Clone(a.Enum)
		out.Attributes[k] = a
	}
	return out
}

func Example() {
	vocab, _ := Load()
	fmt.Println(vocab.Metrics["interconnect.io"].Unit, vocab.Metrics["interconnect.io"].Attributes)
	// Output: By [component direction device pci.bus_id numa.node]
}
