// Package fakenvml builds the fake libnvidia-ml.so.1 (csrc/, C written against the nvml.h that
// ships in the go-nvml module) for tests that run go-nvml's real cgo path without a GPU: the gpu
// receiver's own tests and the built collector's end-to-end tests. What the fake serves, and which
// header it follows, is described at the top of csrc/fakenvml.c.
package fakenvml // import "github.com/otelcol-iclens/otelcol-iclens/internal/fakenvml"

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Build compiles the fake into a temporary directory and returns that directory, to be put on
// LD_LIBRARY_PATH (where go-nvml's dlopen("libnvidia-ml.so.1") finds it, as it finds the real one
// on a node). It skips the test where gcc is missing.
func Build(t testing.TB) string { return build(t) }

// BuildWithoutGPM compiles the fake without the five nvmlGpm* functions, as the NVML of a driver
// that predates GPM: go-nvml binds symbols lazily, so calling one of them would kill the process.
func BuildWithoutGPM(t testing.TB) string { return build(t, "-DFAKE_NVML_NO_GPM") }

func build(t testing.TB, defines ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is needed to build the fake libnvidia-ml.so.1")
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "csrc")
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/NVIDIA/go-nvml")
	list.Dir = src
	out, err := list.Output()
	if err != nil {
		t.Fatalf("locating the go-nvml module for its nvml.h: %v", err)
	}
	headers := filepath.Join(strings.TrimSpace(string(out)), "pkg", "nvml")
	dir := t.TempDir()
	// NVML_NO_UNVERSIONED_FUNC_DEFS, as go-nvml's cgo CFLAGS: nvml.h then leaves every name as
	// written (nvmlInit_v2, not nvmlInit redefined to it).
	args := []string{"-Wall", "-Werror", "-Wno-unused-parameter", "-shared", "-fPIC",
		"-DNVML_NO_UNVERSIONED_FUNC_DEFS=1", "-I", headers}
	args = append(args, defines...)
	args = append(args, "-Wl,-soname,libnvidia-ml.so.1", "-o", filepath.Join(dir, "libnvidia-ml.so.1"),
		filepath.Join(src, "fakenvml.c"))
	if msg, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building the fake libnvidia-ml.so.1: %v\n%s", err, msg)
	}
	return dir
}
