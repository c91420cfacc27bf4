package cpuuncorereceiver

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// N6: the CPU is identified from the cpuinfo of the host that wrote it, in that kernel's format,
// whatever GOARCH this test binary was built for: every x86 fixture on an arm64 runner (or an
// arm64 collector replaying an x86 recording), and the Grace fixture on an amd64 one. On main
// prometheus/procfs chose the parser by GOARCH (cpuinfo_x86.go / cpuinfo_armx.go) and its arm
// parser never fills a vendor: every x86 fixture failed with "no vendor_id" under GOARCH=arm64,
// and the arm64 cpuinfo failed under amd64.
func TestCPUIdentifiedByItsOwnFormat(t *testing.T) {
	t.Logf("GOARCH %s", runtime.GOARCH)
	for fixture, want := range map[string]cpuID{
		"skx":   {vendor: "GenuineIntel", family: 6, model: 0x55},
		"icx":   {vendor: "GenuineIntel", family: 6, model: 0x6a},
		"spr":   {vendor: "GenuineIntel", family: 6, model: 0x8f},
		"gnr":   {vendor: "GenuineIntel", family: 6, model: 0xad},
		"srf":   {vendor: "GenuineIntel", family: 6, model: 0xaf},
		"zen3":  {vendor: "AuthenticAMD", family: 25, model: 0x01},
		"zen4":  {vendor: "AuthenticAMD", family: 25, model: 0x11},
		"vm":    {vendor: "GenuineIntel", family: 6, model: 0x8f, hypervisor: true},
		"gh200": {vendor: vendorARM64, implementer: 0x41, part: 0xd4f},
	} {
		t.Run(fixture, func(t *testing.T) {
			got, err := readCPUID(filepath.Join("testdata", fixture, "proc", "cpuinfo"))
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
	p := platformFor(cpuID{vendor: vendorARM64, implementer: 0x41, part: 0xd4f})
	assert.Equal(t, "grace", p.name)
	assert.Equal(t, "arm64", platformFor(cpuID{vendor: vendorARM64, implementer: 0xc0, part: 0xac3}).name, "Ampere: the CoreSight PMUs decide")
}

// Only the first processor's block counts, and what names no CPU is an error naming the file.
func TestCPUInfoFirstProcessorOnly(t *testing.T) {
	id, err := parseCPUInfo([]byte("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nflags\t\t: fpu\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nflags\t\t: hypervisor\n"))
	require.NoError(t, err)
	assert.Equal(t, cpuID{vendor: "GenuineIntel", family: 6, model: 143}, id)

	path := filepath.Join(t.TempDir(), "cpuinfo")
	require.NoError(t, os.WriteFile(path, []byte("processor\t: 0\nBogoMIPS\t: 50.00\n"), 0o644))
	_, err = readCPUID(path)
	assert.ErrorContains(t, err, path+": neither vendor_id (x86) nor CPU implementer (arm64)")
	require.NoError(t, os.WriteFile(path, []byte("processor\t: 0\nCPU implementer\t: 0xzz\n"), 0o644))
	_, err = readCPUID(path)
	assert.ErrorContains(t, err, `CPU implementer: not a number, got "0xzz"`)
}

// The arm64 MIDR (cpu0/regs/identification/midr_el1, "0x%016llx\n", arch/arm64/kernel/cpuinfo.c)
// names the CPU where cpuinfo cannot: Grace's 0x410fd4f0 is implementer 0x41, part 0xd4f.
func TestMIDRIdentifiesArm64(t *testing.T) {
	var r sysfs.Reader
	id, err := readMIDR(&r, filepath.Join("testdata", "gh200", "sys", "devices", "system", "cpu"))
	require.NoError(t, err)
	assert.Equal(t, cpuID{vendor: vendorARM64, implementer: 0x41, part: 0xd4f}, id)

	root := copyFixture(t, "gh200")
	require.NoError(t, os.Remove(filepath.Join(root, "proc", "cpuinfo")))
	ts := newTestScraper(t, "gh200", func(c *Config) { c.RootPath = root })
	assert.Equal(t, "grace", ts.plat.name, "identified by the MIDR")
	assert.NotEmpty(t, ts.fake.openAttrs(graceSCF0, 0))
}
