package perf

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The format strings below are the ones the kernel prints (uncore_snbep.c format attributes,
// arch/x86/events/amd/uncore.c); the expected raw configs are computed by hand from those bit
// ranges, and match Intel perfmon's UMaskExt for GNR (github.com/intel/perfmon, the Granite Rapids
// uncore event files) and the encodings perf itself prints (perf stat -vv).
func TestFieldEncoding(t *testing.T) {
	pmu := func(formats map[string]string) *PMU {
		p := &PMU{Name: "test", Type: 42, Formats: map[string]Field{}}
		for n, s := range formats {
			f, err := ParseField(n, s+"\n")
			require.NoError(t, err)
			p.Formats[n] = f
		}
		return p
	}
	skxIIO := pmu(map[string]string{"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-35", "ch_mask": "config:36-43", "fc_mask": "config:44-46"})
	icxIIO := pmu(map[string]string{"event": "config:0-7", "umask": "config:8-15", "edge": "config:18", "inv": "config:23", "thresh": "config:24-35", "ch_mask": "config:36-47", "fc_mask": "config:48-50"})
	sprIMC := pmu(map[string]string{"event": "config:0-7", "umask": "config:8-15,32-55", "edge": "config:18", "inv": "config:23", "thresh": "config:24-31"})
	zen4DF := pmu(map[string]string{"event": "config:0-7,32-37", "umask": "config:8-15,24-27"})
	zen3DF := pmu(map[string]string{"event": "config:0-7,32-35,59-60", "umask": "config:8-15"})
	umc := pmu(map[string]string{"event": "config:0-7", "rdwrmask": "config:8-9"})

	for _, tc := range []struct {
		name string
		p    *PMU
		desc string
		want uint64
	}{
		{"SKX IB read part0", skxIIO, "event=0x83,umask=0x04,ch_mask=0x1,fc_mask=0x7", 0x0000701000000483},
		{"SKX IB read parts0-3", skxIIO, "event=0x83,umask=0x04,ch_mask=0xf,fc_mask=0x7", 0x000070f000000483},
		{"SKX OB write part0", skxIIO, "event=0xc0,umask=0x01,ch_mask=0x1,fc_mask=0x7", 0x00007010000001c0},
		{"ICX IB read part7", icxIIO, "event=0x83,umask=0x04,ch_mask=0x80,fc_mask=0x7", 0x0007080000000483},
		{"ICX IB read all parts", icxIIO, "event=0x83,umask=0x04,ch_mask=0xff,fc_mask=0x7", 0x00070ff000000483},
		{"ICX CMPD part0", icxIIO, "event=0x83,umask=0x80,ch_mask=0x1,fc_mask=0x7", 0x0007001000008083},
		{"SPR IMC cas_count_read", sprIMC, "event=0x05,umask=0xcf", 0x0000cf05},
		{"SPR IMC umask split field", sprIMC, "event=0x05,umask=0x1cf", 0x1_0000_cf05},
		{"Zen4 DF cs0 read", zen4DF, "event=0x1f,umask=0x7fe", 0x000000000700fe1f},
		{"Zen4 DF upstream read iom0", zen4DF, "event=0x81f,umask=0x7fe", 0x000000080700fe1f},
		{"Zen3 DF controller4", zen3DF, "event=0x107,umask=0x38", 0x0000000100003807},
		{"Zen4 UMC rd", umc, "event=0x0a,rdwrmask=0x1", 0x10a},
		{"Zen4 UMC wr", umc, "event=0x0a,rdwrmask=0x2", 0x20a},
		{"bare term means 1", skxIIO, "event=0x1,edge", 0x40001},
		{"whole register", skxIIO, "config=0x1234", 0x1234},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.p.EncodeString(tc.desc)
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.Config, "got %#x", a.Config)
			assert.Equal(t, uint32(42), a.Type)
		})
	}

	_, err := skxIIO.EncodeString("event=0x83,ch_mask=0x100")
	assert.ErrorContains(t, err, "does not fit the 8 bits of field ch_mask", "a bit beyond SKX's 8-bit ch_mask is an error, not dropped")
	_, err = umc.EncodeString("event=0x0a,umask=0x1")
	assert.ErrorContains(t, err, `PMU test has no format field "umask"`)
}

func TestFieldRegisters(t *testing.T) {
	f, err := ParseField("filter_tid", "config1:0-8")
	require.NoError(t, err)
	var a Attr
	require.NoError(t, f.Set(&a, 0x1ff))
	assert.Equal(t, uint64(0x1ff), a.Config1)
	assert.Zero(t, a.Config)

	f, err = ParseField("x", "config2:63")
	require.NoError(t, err)
	require.NoError(t, f.Set(&a, 1))
	assert.Equal(t, uint64(1)<<63, a.Config2)

	// perf's util/pmu.c keeps a field's bits as a bitmap: overlapping ranges name their common
	// bits once, and the value's low bits go to the lowest bits whatever the order written. The
	// kernel's drivers write neither; a format file that did (a recording, a future driver)
	// must not make a field wider than its register. The fuzzer found "config:0-30,0-37" read
	// as 69 bits.
	f, err = ParseField("overlap", "config:0-30,0-37")
	require.NoError(t, err)
	assert.Equal(t, 38, f.Width())
	for _, order := range []string{"config:0-7,32-35", "config:32-35,0-7"} {
		f, err = ParseField("event", order)
		require.NoError(t, err)
		a = Attr{}
		require.NoError(t, f.Set(&a, 0x81f))
		assert.Equal(t, uint64(0x8_0000_001f), a.Config, "%s: got %#x", order, a.Config)
	}

	for _, bad := range []string{"config0-7", "config3:0-7", "config:7-0", "config:64", "config:a"} {
		_, err := ParseField("bad", bad)
		assert.Error(t, err, bad)
	}
}

func TestParseTerms(t *testing.T) {
	terms, err := ParseTerms("event=0x04,umask=0x03\n")
	require.NoError(t, err)
	assert.Equal(t, []Term{{"event", 4}, {"umask", 3}}, terms)
	_, err = ParseTerms("event=zz")
	assert.Error(t, err)
	_, err = ParseTerms("")
	assert.Error(t, err)
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0,28\n": {0, 28}, "0-2,8": {0, 1, 2, 8}, "": nil, "5": {5}} {
		got, err := ParseCPUList(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseCPUList("3-1")
	assert.Error(t, err)
}

func TestBytesPerCount(t *testing.T) {
	// Scales as uncore_snbep.c prints them: 64 B CAS, 4 B old IIO free-running, 32 B fixed IIO.
	for _, tc := range []struct {
		scale float64
		unit  string
		want  float64
	}{
		{6.103515625e-5, "MiB", 64},
		{3.814697266e-6, "MiB", 4},
		{3.0517578125e-5, "MiB", 32},
		{1, "B", 1},
	} {
		got, ok := Event{Scale: tc.scale, Unit: tc.unit}.BytesPerCount()
		require.True(t, ok)
		assert.Equal(t, tc.want, got)
	}
	_, ok := Event{Scale: 1, Unit: "Joules"}.BytesPerCount()
	assert.False(t, ok)
}

func TestReadingScaled(t *testing.T) {
	r := Reading{Values: []uint64{100}, Enabled: 1000, Running: 1000}
	v, ok := r.Scaled(0)
	assert.True(t, ok)
	assert.Equal(t, uint64(100), v)
	assert.False(t, r.Multiplexed())

	r = Reading{Values: []uint64{100}, Enabled: 1000, Running: 250}
	v, ok = r.Scaled(0)
	assert.True(t, ok)
	assert.Equal(t, uint64(400), v)
	assert.True(t, r.Multiplexed())
	assert.InDelta(t, 0.25, r.RunningRatio(), 1e-9)

	r = Reading{Values: []uint64{0}, Enabled: 1000, Running: 0}
	_, ok = r.Scaled(0)
	assert.False(t, ok, "a group that never ran has no estimate")
}
