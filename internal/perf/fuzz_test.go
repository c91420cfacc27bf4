package perf

import (
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// The perf files come from the kernel's PMU drivers (format/<field>: "config:0-7", events/<name>:
// "event=0x04,umask=0x03", .scale, .unit, cpumask "0,28"; Documentation/ABI/testing/
// sysfs-bus-event_source-devices-format and -events) or from a recording. Seeds in
// testdata/fuzz/<Fuzz...>/ besides the f.Add ones; `make fuzz` runs each for a bounded number of inputs.

func FuzzParseField(f *testing.F) {
	for _, s := range []string{"config:0-7", "config1:0-63", "config:18", "config:0-7,32-35", "config2:64", "", "config:7-0", "config:0-30,0-37", "config:32-35,0-7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseField("event", s)
		if err != nil {
			return
		}
		w := fl.Width()
		if w < 1 || w > 64 {
			t.Fatalf("ParseField(%q): width %d", s, w)
		}
		// The widest value the field holds lands on exactly its w bits of one register; one
		// bit more does not fit.
		var a Attr
		if err := fl.Set(&a, ^uint64(0)>>(64-w)); err != nil {
			t.Fatalf("ParseField(%q): the %d-bit value does not fit: %v", s, w, err)
		}
		if got := bits.OnesCount64(a.Config | a.Config1 | a.Config2); got != w {
			t.Fatalf("ParseField(%q): %d bits set by a %d-bit field (%v)", s, got, w, a)
		}
		if w < 64 && fl.Set(&a, 1<<w) == nil {
			t.Fatalf("ParseField(%q): a %d-bit value fits a %d-bit field", s, w+1, w)
		}
	})
}

func FuzzParseTerms(f *testing.F) {
	for _, s := range []string{"event=0x04,umask=0x03", "event=0xff", "edge", "event=0x04,,umask=", "=1", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { _, _ = ParseTerms(s) })
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0,28", "0-3,8-11", "", "3-1", "0-99999999999", "-", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err == nil && len(cpus) > 1<<16 {
			t.Fatalf("ParseCPUList(%q): %d CPUs", s, len(cpus))
		}
	})
}

// FuzzPMUEvent loads a PMU whose format, event, .scale and .unit files hold the fuzzed contents
// and reads the event: errors, never a panic, and a byte size that is positive and finite.
func FuzzPMUEvent(f *testing.F) {
	f.Add("config:0-7", "event=0x04,umask=0x03", "6.103515625e-5", "MiB")
	f.Add("config:0-7", "event=0x04", "-1", "B")
	f.Add("config:0-63", "event=0xffffffffffffffff", "1e400", "GiB")
	f.Fuzz(func(t *testing.T, format, event, scale, unit string) {
		dir := filepath.Join(t.TempDir(), "uncore_x")
		files := map[string]string{"type": "13\n", "cpumask": "0\n", "format/event": format, "format/umask": "config:8-15",
			"events/e": event, "events/e.scale": scale, "events/e.unit": unit}
		for p, v := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := &sysfs.Reader{}
		p, err := LoadPMU(r, dir)
		if err != nil {
			return
		}
		ev, err := p.Event(r, "e")
		if err != nil {
			return
		}
		if b, ok := ev.BytesPerCount(); ok && !(b > 0 && b < 1e300) {
			t.Fatalf("bytes per count %v from scale %q unit %q", b, scale, unit)
		}
	})
}
