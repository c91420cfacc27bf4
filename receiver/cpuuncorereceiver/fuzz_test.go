package cpuuncorereceiver

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadCPUID: /proc/cpuinfo as the kernel prints it (arch/x86/kernel/cpu/proc.c show_cpuinfo,
// arch/arm64/kernel/cpuinfo.c c_show), or whatever a recording holds, identifies the CPU or fails
// with an error naming the file. Seeds in testdata/fuzz/FuzzReadCPUID besides these; `make fuzz`
// runs it for a bounded number of inputs.
func FuzzReadCPUID(f *testing.F) {
	f.Add("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 106\nflags\t\t: fpu hypervisor\n\n")
	f.Add("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\n")
	f.Add("processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd4f\n\n")
	f.Add("processor : x\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(t.TempDir(), "cpuinfo")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = readCPUID(path)
	})
}
