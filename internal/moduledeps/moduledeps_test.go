// Package moduledeps_test keeps tooling out of the components' module: the receivers, the
// connector, the exporter and the extension are what every distribution imports, and the module
// graph a distribution inherits must not carry the dashboard generator (grafana-foundation-sdk)
// or the simulator (the tools module), which live in tools/ with a go.mod of their own.
package moduledeps_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// forbidden are module paths (prefixes) the components' module must not depend on, directly or
// through another module.
var forbidden = []string{
	"github.com/grafana/grafana-foundation-sdk",
	"github.com/otelcol-iclens/otelcol-iclens/tools",
	"github.com/otelcol-iclens/otelcol-iclens/distributions",
}

func TestComponentModuleHasNoToolingDependency(t *testing.T) {
	// go test puts its own GOROOT/bin first on the test's PATH.
	cmd := exec.Command("go", "mod", "graph")
	cmd.Dir = filepath.Join("..", "..") // the root module: go.mod of the components
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod graph: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go mod graph printed %d lines; expected the collector's dependencies", len(lines))
	}
	for _, line := range lines {
		// "<module>@<version> <requirement>@<version>"; the root module itself has no version.
		for _, m := range strings.Fields(line) {
			path, _, _ := strings.Cut(m, "@")
			for _, f := range forbidden {
				if path == f || strings.HasPrefix(path, f+"/") {
					t.Errorf("the components' module depends on %s (%q); tooling belongs in tools/", path, line)
				}
			}
		}
	}
}
