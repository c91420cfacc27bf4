package perf

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// DevicesDir is where the kernel registers every PMU (perf_pmu_register), relative to the sysfs
// mount: /sys/bus/event_source/devices/<name>.
const DevicesDir = "bus/event_source/devices"

// PMU is one perf PMU as sysfs describes it.
type PMU struct {
	Name string
	// Dir is the PMU's sysfs directory.
	Dir string
	// Type goes into perf_event_attr.type.
	Type uint32
	// CPUs is the PMU's cpumask: for uncore PMUs the one CPU per die on which its events must be
	// opened (uncore.c uncore_get_attr_cpumask prints a CPU list such as "0,28").
	CPUs []int
	// Formats holds format/<field> by field name.
	Formats map[string]Field
}

// ListPMUs returns the names of the PMUs under devicesDir, sorted. A missing directory is not an
// error (no perf support, or sysfs not mounted where expected): it yields no names.
func ListPMUs(devicesDir string) ([]string, error) {
	return sysfs.ListDir(devicesDir)
}

// LoadPMU reads a PMU's type, cpumask and format fields. A PMU without a cpumask file (core PMUs,
// software) gets no CPUs; callers that need a CPU must treat that as unusable.
func LoadPMU(r *sysfs.Reader, dir string) (*PMU, error) {
	p := &PMU{Name: filepath.Base(dir), Dir: dir, Formats: map[string]Field{}}
	t, err := r.ReadUint(filepath.Join(dir, "type"))
	if err != nil {
		return nil, err
	}
	if t > math.MaxUint32 {
		return nil, fmt.Errorf("%s: type %d out of range", filepath.Join(dir, "type"), t)
	}
	p.Type = uint32(t)
	if s, err := r.ReadString(filepath.Join(dir, "cpumask")); err == nil {
		cpus, perr := ParseCPUList(s)
		if perr != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "cpumask"), perr)
		}
		p.CPUs = cpus
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	formats, err := os.ReadDir(filepath.Join(dir, "format"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range formats {
		path := filepath.Join(dir, "format", e.Name())
		s, err := r.ReadString(path)
		if err != nil {
			return nil, err
		}
		f, err := ParseField(e.Name(), s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p.Formats[e.Name()] = f
	}
	return p, nil
}

// Encode turns event terms into an Attr using the PMU's format fields. `config`, `config1` and
// `config2` set a whole register, as perf's parser allows. A term the PMU has no field for is an
// error naming both: the encoding would otherwise count something else without saying so.
func (p *PMU) Encode(terms []Term) (Attr, error) {
	a := Attr{Type: p.Type}
	for _, t := range terms {
		switch t.Name {
		case "config":
			a.Config = t.Value
			continue
		case "config1":
			a.Config1 = t.Value
			continue
		case "config2":
			a.Config2 = t.Value
			continue
		}
		f, ok := p.Formats[t.Name]
		if !ok {
			return Attr{}, fmt.Errorf("PMU %s has no format field %q", p.Name, t.Name)
		}
		if err := f.Set(&a, t.Value); err != nil {
			return Attr{}, fmt.Errorf("PMU %s: %w", p.Name, err)
		}
	}
	return a, nil
}

// EncodeString parses and encodes an event description.
func (p *PMU) EncodeString(desc string) (Attr, error) {
	terms, err := ParseTerms(desc)
	if err != nil {
		return Attr{}, fmt.Errorf("PMU %s: %w", p.Name, err)
	}
	return p.Encode(terms)
}

// Event is a named event alias from events/<name>, with its scale and unit.
type Event struct {
	Name string
	// Desc is the file's content, e.g. "event=0x04,umask=0x03".
	Desc string
	Attr Attr
	// Scale is events/<name>.scale, 1 where the kernel gives none.
	Scale float64
	// Unit is events/<name>.unit ("MiB"), empty where the kernel gives none.
	Unit string
}

// HasEvent reports whether events/<name> exists.
func (p *PMU) HasEvent(name string) bool {
	_, err := os.Stat(filepath.Join(p.Dir, "events", name))
	return err == nil
}

// Event reads events/<name> and its .scale/.unit. Uncore event files are printed without a
// trailing newline (uncore.c uncore_event_show); both forms are accepted.
func (p *PMU) Event(r *sysfs.Reader, name string) (Event, error) {
	base := filepath.Join(p.Dir, "events", name)
	desc, err := r.ReadString(base)
	if err != nil {
		return Event{}, err
	}
	a, err := p.EncodeString(desc)
	if err != nil {
		return Event{}, fmt.Errorf("%s: %w", base, err)
	}
	ev := Event{Name: name, Desc: desc, Attr: a, Scale: 1}
	if s, err := r.ReadString(base + ".scale"); err == nil {
		v, perr := strconv.ParseFloat(s, 64)
		if perr != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Event{}, fmt.Errorf("%s.scale: bad scale %q", base, s)
		}
		ev.Scale = v
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Event{}, err
	}
	if s, err := r.ReadString(base + ".unit"); err == nil {
		ev.Unit = s
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Event{}, err
	}
	return ev, nil
}

// HasUnit reports whether the kernel gives the event a unit (events/<name>.unit). Uncore drivers
// that print bytes give one (uncore.c uncore_event_show with .unit "MiB"); arm_cspmu events have
// none (arm_cspmu.c arm_cspmu_sysfs_event_show prints only "event=0x%llx").
func (e Event) HasUnit() bool { return e.Unit != "" }

// unitBytes is the size of each unit perf's .unit files use for byte counts.
var unitBytes = map[string]float64{
	"B": 1, "Bytes": 1, "bytes": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
	"KB": 1e3, "MB": 1e6, "GB": 1e9,
}

// BytesPerCount converts an event's scale and unit into bytes per count: perf prints
// count * scale in unit, so cas_count_read (scale 6.103515625e-5, unit MiB) is 64 bytes a count.
// The kernel writes scales with ten significant digits (3.814697266e-6 for 4 B), so a result
// within 1e-6 of an integer is rounded to it. ok is false when the unit is not a byte unit.
func (e Event) BytesPerCount() (float64, bool) {
	mult, ok := unitBytes[e.Unit]
	if !ok {
		return 0, false
	}
	v := e.Scale * mult
	if r := math.Round(v); r > 0 && math.Abs(v-r)/r < 1e-6 {
		return r, true
	}
	return v, true
}

// maxCPUs bounds a CPU list: the kernel's NR_CPUS is at most 8192 (arch/x86/Kconfig, MAXSMP).
const maxCPUs = 8192

// ParseCPUList parses a kernel CPU list ("0,28", "0-3,8-11", "" for none).
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		loS, hiS, isRange := strings.Cut(part, "-")
		lo, err := strconv.Atoi(loS)
		if err != nil || lo < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(hiS); err != nil || hi < lo {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		if hi >= maxCPUs || len(cpus)+hi-lo >= maxCPUs {
			// A cpumask from a recording or a broken file; no kernel has that many CPUs.
			return nil, fmt.Errorf("bad CPU list %q: more than %d CPUs", s, maxCPUs)
		}
		for c := lo; c <= hi; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
