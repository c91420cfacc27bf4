package recording

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSubSamplesRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var s SubSamples
	s.Period = Duration(10 * time.Millisecond)
	s.Add(t0, map[string]uint64{"a": 1, "b": 10})
	s.Add(t0.Add(10*time.Millisecond), map[string]uint64{"a": 2}) // b's read failed
	s.Add(t0.Add(20*time.Millisecond), map[string]uint64{"a": 3, "b": 30, "c": 7})
	b, err := json.Marshal(RNICSample{Bursts: &s})
	if err != nil {
		t.Fatal(err)
	}
	var got RNICSample
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	g := got.Bursts
	if g.Len() != 3 || time.Duration(g.Period) != 10*time.Millisecond || !g.Time(2).Equal(t0.Add(20*time.Millisecond)) {
		t.Fatalf("decoded %s as %+v", b, g)
	}
	want := []struct {
		i    int
		path string
		v    uint64
		ok   bool
	}{{0, "a", 1, true}, {1, "a", 2, true}, {2, "a", 3, true}, {0, "b", 10, true}, {1, "b", 0, false},
		{2, "b", 30, true}, {0, "c", 0, false}, {1, "c", 0, false}, {2, "c", 7, true}, {0, "d", 0, false}}
	for _, w := range want {
		if v, ok := g.Value(w.i, w.path); v != w.v || ok != w.ok {
			t.Errorf("Value(%d, %s) = %d, %v; want %d, %v (from %s)", w.i, w.path, v, ok, w.v, w.ok, b)
		}
	}
}

// A sample recorded before the fast sampler existed still decodes, without sub-samples.
func TestRNICSampleWithoutBursts(t *testing.T) {
	var got RNICSample
	if err := json.Unmarshal([]byte(`{"ethtool":{"eth0":{"rx_prio3_pause":1}}}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Bursts.Len() != 0 || got.Ethtool["eth0"]["rx_prio3_pause"] != 1 {
		t.Errorf("decoded %+v", got)
	}
}
