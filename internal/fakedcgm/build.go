// Package fakedcgm builds the fake libdcgm.so.4 (csrc/, C written against the DCGM headers that
// ship in the go-dcgm module) for tests that run go-dcgm's real cgo path without a GPU: the gpu
// receiver's own tests and the built collector's end-to-end test. What the fake serves, and which
// DCGM source each behaviour follows, is described at the top of csrc/fakedcgm.c.
package fakedcgm // import "github.com/otelcol-iclens/otelcol-iclens/internal/fakedcgm"

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Build compiles the fake into a temporary directory and returns that directory, to be put on
// LD_LIBRARY_PATH (where dlopen("libdcgm.so.4") finds it, as it finds the real one on a node). It
// skips the test where gcc is missing.
func Build(t testing.TB) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is needed to build the fake libdcgm.so.4")
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "csrc")
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/NVIDIA/go-dcgm")
	list.Dir = src
	out, err := list.Output()
	if err != nil {
		t.Fatalf("locating the go-dcgm module for its DCGM headers: %v", err)
	}
	headers := filepath.Join(strings.TrimSpace(string(out)), "pkg", "dcgm")
	dir := t.TempDir()
	cmd := exec.Command(gcc, "-Wall", "-Werror", "-Wno-unused-parameter", "-shared", "-fPIC",
		"-I", headers, "-Wl,-soname,libdcgm.so.4", "-o", filepath.Join(dir, "libdcgm.so.4"),
		filepath.Join(src, "fakedcgm.c"), filepath.Join(src, "stubs.c"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the fake libdcgm.so.4: %v\n%s", err, msg)
	}
	return dir
}
