// Package metadata loads the shared vocabulary of otelcol-iclens (vocabulary.yaml): the
// interconnect.io metric and the attributes every receiver puts on its points.
package metadata // import "github.com/otelcol-iclens/otelcol-iclens/metadata"

import (
	_ "embed"
	"fmt"

	"go.yaml.in/yaml/v3"
)

//go:embed vocabulary.yaml
var vocabularyYAML []byte

// Sum mirrors mdatagen's `sum:` block.
type Sum struct {
	ValueType              string `yaml:"value_type"`
	Monotonic              bool   `yaml:"monotonic"`
	AggregationTemporality string `yaml:"aggregation_temporality"`
}

// Metric mirrors the parts of mdatagen's metric definition that the vocabulary fixes.
type Metric struct {
	Description string   `yaml:"description"`
	Unit        string   `yaml:"unit"`
	Sum         *Sum     `yaml:"sum"`
	Attributes  []string `yaml:"attributes"`
}

// Attribute mirrors mdatagen's attribute definition.
type Attribute struct {
	Description  string   `yaml:"description"`
	Type         string   `yaml:"type"`
	Enum         []string `yaml:"enum"`
	NameOverride string   `yaml:"name_override"`
}

// Vocabulary is the shared metric model.
type Vocabulary struct {
	Version    int                  `yaml:"version"`
	Metrics    map[string]Metric    `yaml:"metrics"`
	Attributes map[string]Attribute `yaml:"attributes"`
	Semconv    map[string]string    `yaml:"semconv"`
}

// Load parses the embedded vocabulary.
func Load() (*Vocabulary, error) {
	return Parse(vocabularyYAML)
}

// Parse parses a vocabulary or an mdatagen metadata.yaml (both share the metric and attribute syntax).
func Parse(data []byte) (*Vocabulary, error) {
	var v Vocabulary
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("parsing vocabulary: %w", err)
	}
	return &v, nil
}
