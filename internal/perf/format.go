package perf

import (
	"fmt"
	mathbits "math/bits"
	"strconv"
	"strings"
)

// Attr is the part of perf_event_attr that selects what a counter counts. A PMU's format/*
// files say which bits of config, config1 and config2 each named field occupies.
type Attr struct {
	// Type is the PMU's dynamic type (its sysfs `type` file) or a generic PERF_TYPE_*.
	Type    uint32
	Config  uint64
	Config1 uint64
	Config2 uint64
}

func (a Attr) String() string {
	return fmt.Sprintf("type=%d,config=%#x,config1=%#x,config2=%#x", a.Type, a.Config, a.Config1, a.Config2)
}

// Field is one format/<name> file: which register and which bits a named field occupies.
// Fields may be split, e.g. SPR IMC `umask` = `config:8-15,32-55` (uncore_snbep.c
// spr_uncore_raw_format_group) or Zen 4 DF `event` = `config:0-7,32-37`
// (arch/x86/events/amd/uncore.c). The bits are a set, as in perf's own util/pmu.c (struct
// perf_pmu_format: DECLARE_BITMAP(bits, PERF_PMU_FORMAT_BITS)): ranges that overlap name their
// common bits once, and pmu_format_value gives the value's low bits to the field's lowest bits,
// whatever order the ranges are written in.
type Field struct {
	Name string
	// Reg is 0 for config, 1 for config1, 2 for config2.
	Reg int
	// bits has bit n set when the field occupies bit n of its register.
	bits uint64
}

// Width is the number of value bits the field can hold.
func (f Field) Width() int { return mathbits.OnesCount64(f.bits) }

// ParseField parses a format file's content ("config:0-7", "config1:0-3,8", "config:18"). The
// kernel writes it with a trailing newline (DEFINE_UNCORE_FORMAT_ATTR); white space is ignored.
func ParseField(name, s string) (Field, error) {
	s = strings.TrimSpace(s)
	reg, bits, ok := strings.Cut(s, ":")
	if !ok {
		return Field{}, fmt.Errorf("format %s: %q has no register", name, s)
	}
	f := Field{Name: name}
	switch reg {
	case "config":
		f.Reg = 0
	case "config1":
		f.Reg = 1
	case "config2":
		f.Reg = 2
	default:
		return Field{}, fmt.Errorf("format %s: unsupported register %q", name, reg)
	}
	for _, part := range strings.Split(bits, ",") {
		loS, hiS, isRange := strings.Cut(part, "-")
		lo, err := strconv.ParseUint(loS, 10, 8)
		if err != nil || lo > 63 {
			return Field{}, fmt.Errorf("format %s: bad bit %q in %q", name, loS, s)
		}
		hi := lo
		if isRange {
			hi, err = strconv.ParseUint(hiS, 10, 8)
			if err != nil || hi > 63 || hi < lo {
				return Field{}, fmt.Errorf("format %s: bad range %q in %q", name, part, s)
			}
		}
		f.bits |= ^uint64(0) >> (63 - hi) &^ (1<<lo - 1)
	}
	return f, nil
}

// Set spreads v over the field's bits in a. A value wider than the field is an error, not a
// silent truncation: a truncated umask counts another event.
func (f Field) Set(a *Attr, v uint64) error {
	if w := f.Width(); w < 64 && v>>uint(w) != 0 {
		return fmt.Errorf("value %#x does not fit the %d bits of field %s", v, w, f.Name)
	}
	reg := &a.Config
	switch f.Reg {
	case 1:
		reg = &a.Config1
	case 2:
		reg = &a.Config2
	}
	for fb := f.bits; fb != 0; fb &= fb - 1 {
		b := uint64(1) << mathbits.TrailingZeros64(fb)
		if v&1 != 0 {
			*reg |= b
		} else {
			*reg &^= b
		}
		v >>= 1
	}
	return nil
}

// Term is one name=value of an event description.
type Term struct {
	Name  string
	Value uint64
}

// ParseTerms parses an event description as the kernel prints events/<name>
// ("event=0x04,umask=0x03", no trailing newline for Intel uncore; amd_iommu adds one). A bare
// name means 1, as in perf's parser ("edge").
func ParseTerms(s string) ([]Term, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty event description")
	}
	var terms []Term
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, val, hasVal := strings.Cut(part, "=")
		if name == "" {
			return nil, fmt.Errorf("event %q: empty term", s)
		}
		v := uint64(1)
		if hasVal {
			var err error
			v, err = strconv.ParseUint(val, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("event %q: term %s: %w", s, name, err)
			}
		}
		terms = append(terms, Term{Name: name, Value: v})
	}
	return terms, nil
}
