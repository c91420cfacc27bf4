// Package packaging_test checks the .deb/.rpm definition (nfpm.yaml), the systemd unit, the
// container image (Dockerfile) and, where ICLENS_DEB / ICLENS_RPM name a built package and the
// test runs as root (.ci/run after `make package`), the package installed with dpkg
// (install_linux_test.go) and with rpm (rpm_linux_test.go): its files, user and unit, the installed
// binary running as that user with the installed configuration, an upgrade keeping an edited
// configuration, and the removal; and the .deb's unit run by a real systemd, booted in a container
// (systemd_linux_test.go).
package packaging_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	user     = "otelcol-iclens"
	unitPath = "/usr/lib/systemd/system/otelcol-iclens.service"
	stateDir = "/var/lib/otelcol-iclens"
	confDir  = "/etc/otelcol-iclens"
)

// unitDirectives reads a systemd unit into "Section.Key" -> values (a key may repeat).
func unitDirectives(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q", path, line)
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// TestUnitLeastPrivilege pins the unit's privileges to what README.md ("Packages") explains.
func TestUnitLeastPrivilege(t *testing.T) {
	u := unitDirectives(t, "otelcol-iclens.service")
	want := map[string]string{
		"Service.User":                  user,
		"Service.Group":                 user,
		"Service.AmbientCapabilities":   "CAP_PERFMON",
		"Service.CapabilityBoundingSet": "CAP_PERFMON",
		"Service.NoNewPrivileges":       "yes",
		"Service.ProtectSystem":         "strict",
		"Service.ProtectHome":           "yes",
		"Service.PrivateTmp":            "yes",
		"Service.ReadOnlyPaths":         "/sys",
		"Service.StateDirectory":        "otelcol-iclens",
		"Service.Restart":               "on-failure",
		"Service.EnvironmentFile":       confDir + "/otelcol-iclens.conf",
		// The collector reloads its configuration on SIGHUP (otelcol/collector.go, Run: a SIGHUP
		// from the signals channel calls reloadConfiguration; TestCollectorReloadsOnSIGHUP).
		"Service.ExecReload": "/bin/kill -HUP $MAINPID",
		"Install.WantedBy":   "multi-user.target",
	}
	for k, v := range want {
		assert.Equal(t, []string{v}, u[k], k)
	}
	// Ordered after DCGM's host engine, which is neither required nor needed.
	assert.Contains(t, strings.Join(u["Unit.After"], " "), "nvidia-dcgm.service")
	assert.Contains(t, u["Unit.Wants"], "nvidia-dcgm.service")
	assert.NotContains(t, u, "Unit.Requires")
	assert.NotContains(t, u, "Unit.BindsTo")
	assert.NotContains(t, u, "Service.ReadWritePaths", "the state directory is the only writable path")
}

// TestPackageContents: every file nfpm.yaml packs exists in the tree (or is built by `make
// build`), the configuration files are marked as such, and the scripts are there.
func TestPackageContents(t *testing.T) {
	b, err := os.ReadFile("nfpm.yaml")
	require.NoError(t, err)
	var cfg struct {
		Contents []struct {
			Src, Dst, Type string
		} `yaml:"contents"`
		Scripts map[string]string `yaml:"scripts"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cfg))
	dst := map[string]string{}
	for _, c := range cfg.Contents {
		dst[c.Dst] = c.Type
		if c.Src == "${ICLENS_PKG_BINARY}" {
			continue // built by make build or make build-arm64 (Makefile, PKG_BINARY)
		}
		_, err := os.Stat(filepath.Join("..", c.Src))
		assert.NoError(t, err, c.Src)
	}
	for _, d := range []string{"/usr/bin/otelcol-iclens", unitPath, "/usr/share/doc/otelcol-iclens/copyright", "/usr/share/licenses/otelcol-iclens/LICENSE"} {
		assert.Contains(t, dst, d)
	}
	assert.Equal(t, "config|noreplace", dst[confDir+"/config.yaml"])
	assert.Equal(t, "config|noreplace", dst[confDir+"/otelcol-iclens.conf"])
	for _, s := range []string{"preinstall", "postinstall", "preremove", "postremove"} {
		_, err := os.Stat(filepath.Join("..", cfg.Scripts[s]))
		assert.NoError(t, err, s)
	}
}
