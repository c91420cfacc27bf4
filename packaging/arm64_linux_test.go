//go:build linux

package packaging_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestArm64Packages checks the linux/arm64 .deb and .rpm that `make package-arm64` built (Grace
// nodes: GH200, GB200), which this x86 machine cannot install: each declares its architecture as
// its package manager names it, unpacks its files where the amd64 package puts them, and holds an
// AArch64 collector linked against glibc's AArch64 loader (cgo). Where qemu-user is installed the
// unpacked binary runs and lists the project's receivers.
func TestArm64Packages(t *testing.T) {
	deb, rpm := os.Getenv("ICLENS_DEB_ARM64"), os.Getenv("ICLENS_RPM_ARM64")
	if deb == "" || rpm == "" {
		t.Skip("ICLENS_DEB_ARM64 and ICLENS_RPM_ARM64 are not set: .ci/run sets them to what `make package-arm64` built")
	}

	t.Run("deb", func(t *testing.T) {
		assert.Equal(t, "arm64\n", run(t, "dpkg-deb", "--field", deb, "Architecture"))
		root := t.TempDir()
		run(t, "dpkg-deb", "-x", deb, root)
		checkArm64Tree(t, root)
	})
	t.Run("rpm", func(t *testing.T) {
		assert.Equal(t, "aarch64", run(t, "rpm", "-qp", "--qf", "%{ARCH}", rpm))
		// Unpacked into a root of its own, with its own database: nothing of this machine changes.
		root := t.TempDir()
		run(t, "rpm", "--root", root, "--initdb")
		run(t, "rpm", "--root", root, "-i", "--nodeps", "--noscripts", "--ignorearch", "--nosignature", rpm)
		checkArm64Tree(t, root)
	})
}

func checkArm64Tree(t *testing.T, root string) {
	t.Helper()
	for _, f := range []string{confDir + "/config.yaml", confDir + "/otelcol-iclens.conf", unitPath} {
		_, err := os.Stat(filepath.Join(root, f))
		assert.NoError(t, err, f)
	}
	bin := filepath.Join(root, "usr", "bin", "otelcol-iclens")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, elf.EM_AARCH64, f.Machine)
	var interp string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			_, err := p.ReadAt(b, 0)
			require.NoError(t, err)
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	assert.Equal(t, "/lib/ld-linux-aarch64.so.1", interp, "a cgo binary for glibc on AArch64")

	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Log("no qemu-aarch64-static on this machine: the arm64 binary is not run")
		return
	}
	// The cross C library (libc6-dev-arm64-cross) is the loader's root for the dynamic binary.
	out := run(t, qemu, "-L", "/usr/aarch64-linux-gnu", bin, "components")
	for _, r := range []string{"name: rnic", "name: cpuuncore", "name: gpu"} {
		assert.Contains(t, out, r)
	}
}
