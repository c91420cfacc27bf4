// Package moduledeps_test keeps tooling out of the components' module: the receivers, the
// connector, the exporter and the extension are what every distribution imports, and the module
// graph a distribution inherits must not carry the dashboard generator (grafana-foundation-sdk)
// or the simulator (the tools module), which live in tools/ with a go.mod of their own.
package moduledeps_test

import (
	"encoding/json"
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

// notDirect are modules the components' module gets only through the collector's own libraries
// (confighttp brings snappy, gRPC brings protobuf): the benchmark's push backend
// (tools/internal/pushsink) decodes those wire formats itself, and a direct requirement here would
// mean that tooling code moved back into the components' module.
var notDirect = []string{
	"github.com/golang/snappy",
	"google.golang.org/protobuf",
}

func TestComponentModuleRequiresNoWireFormatDirectly(t *testing.T) {
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(cmd.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	if len(mod.Require) < 10 {
		t.Fatalf("go.mod lists %d requirements; expected the collector's dependencies", len(mod.Require))
	}
	for _, r := range mod.Require {
		for _, f := range notDirect {
			if r.Path == f && !r.Indirect {
				t.Errorf("the components' module requires %s directly; the benchmark's wire formats belong in tools/", r.Path)
			}
		}
	}
}
