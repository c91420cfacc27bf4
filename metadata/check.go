package metadata

import (
	"fmt"
	"slices"
)

// Check compares a receiver's metadata.yaml (parsed with Parse) with the vocabulary and returns one
// sentence per disagreement. A receiver that does not emit a shared metric or attribute is fine;
// one that defines it must define it exactly as the vocabulary does, except that an attribute's enum
// may be a subset of the shared one.
func Check(vocab, md *Vocabulary) []string {
	var problems []string
	uses := map[string]bool{}
	for name, want := range vocab.Metrics {
		got, ok := md.Metrics[name]
		if !ok {
			continue
		}
		if got.Description != want.Description {
			problems = append(problems, fmt.Sprintf("metric %s: description %q, want %q", name, got.Description, want.Description))
		}
		if got.Unit != want.Unit {
			problems = append(problems, fmt.Sprintf("metric %s: unit %q, want %q", name, got.Unit, want.Unit))
		}
		switch {
		case got.Sum == nil:
			problems = append(problems, fmt.Sprintf("metric %s: must be a sum", name))
		case *got.Sum != *want.Sum:
			problems = append(problems, fmt.Sprintf("metric %s: sum %+v, want %+v", name, *got.Sum, *want.Sum))
		}
		if !slices.Equal(got.Attributes, want.Attributes) {
			problems = append(problems, fmt.Sprintf("metric %s: attributes %v, want %v", name, got.Attributes, want.Attributes))
		}
		for _, a := range want.Attributes {
			uses[a] = true
		}
	}
	for name, want := range vocab.Attributes {
		got, ok := md.Attributes[name]
		if !ok {
			if uses[name] {
				problems = append(problems, fmt.Sprintf("attribute %s: used by a shared metric but not defined", name))
			}
			continue
		}
		if got.NameOverride != "" && got.NameOverride != name {
			problems = append(problems, fmt.Sprintf("attribute %s: renamed to %q", name, got.NameOverride))
		}
		if got.Description != want.Description {
			problems = append(problems, fmt.Sprintf("attribute %s: description %q, want %q", name, got.Description, want.Description))
		}
		if got.Type != want.Type {
			problems = append(problems, fmt.Sprintf("attribute %s: type %q, want %q", name, got.Type, want.Type))
		}
		if len(want.Enum) > 0 && len(got.Enum) == 0 {
			problems = append(problems, fmt.Sprintf("attribute %s: must declare its enum (a subset of %v)", name, want.Enum))
		}
		for _, v := range got.Enum {
			if !slices.Contains(want.Enum, v) {
				problems = append(problems, fmt.Sprintf("attribute %s: enum value %q is not in the vocabulary %v", name, v, want.Enum))
			}
		}
	}
	return problems
}
