// Package packaging_test checks the .deb/.rpm definition (nfpm.yaml), the systemd unit and, where
// ICLENS_DEB names a built package and the test runs as root (.ci/run after `make package`), the
// package installed with dpkg: its files, user and unit, the installed binary running as that user
// with the installed configuration, an upgrade keeping an edited configuration, and the purge.
package packaging_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
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
		"Install.WantedBy":              "multi-user.target",
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
		if c.Src == "bin/otelcol-iclens" {
			continue // built by make build
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

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestInstalledDeb installs the built .deb on this machine (CI), runs it as its user, upgrades
// it over an edited configuration and purges it.
func TestInstalledDeb(t *testing.T) {
	deb := os.Getenv("ICLENS_DEB")
	if deb == "" {
		t.Skip("ICLENS_DEB is not set: .ci/run sets it to the package `make package` built")
	}
	require.Zero(t, os.Geteuid(), "dpkg -i needs root")
	_, err := exec.Command("dpkg-query", "-W", "otelcol-iclens").CombinedOutput()
	require.Error(t, err, "otelcol-iclens is already installed on this machine; the test installs and purges it")
	t.Cleanup(func() { _ = exec.Command("dpkg", "--purge", "otelcol-iclens").Run() })

	run(t, "dpkg", "-i", deb)

	// Files and their owners.
	for _, f := range []string{"/usr/bin/otelcol-iclens", confDir + "/config.yaml", confDir + "/otelcol-iclens.conf", unitPath,
		"/usr/share/doc/otelcol-iclens/copyright", "/usr/share/doc/otelcol-iclens/README.md"} {
		_, err := os.Stat(f)
		assert.NoError(t, err, f)
	}
	conffiles := run(t, "dpkg-query", "-W", "-f=${Conffiles}", "otelcol-iclens")
	assert.Contains(t, conffiles, confDir+"/config.yaml")
	assert.Contains(t, conffiles, confDir+"/otelcol-iclens.conf")

	// A system user without a login, owning the state directory.
	pw := strings.Split(strings.TrimSpace(run(t, "getent", "passwd", user)), ":")
	require.Len(t, pw, 7)
	uid, err := strconv.Atoi(pw[2])
	require.NoError(t, err)
	assert.Less(t, uid, 1000, "a system user")
	assert.Equal(t, stateDir, pw[5])
	assert.Contains(t, []string{"/usr/sbin/nologin", "/sbin/nologin", "/bin/false"}, pw[6])
	fi, err := os.Stat(stateDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700)|os.ModeDir, fi.Mode())
	assert.Equal(t, uint32(uid), fi.Sys().(*syscall.Stat_t).Uid)

	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		out, err := exec.Command(sa, "verify", unitPath).CombinedOutput()
		assert.NoError(t, err, "systemd-analyze verify:\n%s", out)
		assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify")
	} else {
		t.Log("no systemd-analyze on this machine: the unit is checked by TestUnitLeastPrivilege only")
	}

	runInstalled(t, uid)

	// An upgrade over an edited configuration keeps the edit.
	const edit = "\n# edited on this node\n"
	f, err := os.OpenFile(confDir+"/config.yaml", os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(edit)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	run(t, "dpkg", "-i", deb)
	b, err := os.ReadFile(confDir + "/config.yaml")
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(b), edit), "the upgrade replaced the edited config.yaml")

	// Purge: package files, configuration, state and user are gone.
	run(t, "dpkg", "--purge", "otelcol-iclens")
	for _, p := range []string{"/usr/bin/otelcol-iclens", unitPath, confDir, stateDir} {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "%s is left after the purge", p)
	}
	assert.Error(t, exec.Command("getent", "passwd", user).Run(), "the user is left after the purge")
	assert.Error(t, exec.Command("getent", "group", user).Run(), "the group is left after the purge")
}

// runInstalled runs the installed binary as the package's user with the installed environment
// file and configuration, as the unit does (without systemd, which CI containers do not run):
// it must stay up and quiet on a machine without the hardware.
func runInstalled(t *testing.T, uid int) {
	t.Helper()
	env := []string{"PATH=/usr/bin:/bin", "STATE_DIRECTORY=" + stateDir}
	var options string
	b, err := os.ReadFile(confDir + "/otelcol-iclens.conf")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		v = strings.Trim(v, `"`)
		if k == "OTELCOL_OPTIONS" {
			options = v
			continue
		}
		env = append(env, k+"="+v)
	}
	require.NotEmpty(t, options)
	// Loopback ports of this test's own: other tests may run on the machine.
	prom, health, tel, view := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	_, telPort, _ := net.SplitHostPort(tel)
	env = append(env, "ICLENS_PROMETHEUS_ENDPOINT="+prom, "ICLENS_HEALTH_ENDPOINT="+health, "ICLENS_TELEMETRY_PORT="+telPort,
		"ICLENS_LENSVIEW_ENDPOINT="+view)

	args := append([]string{"--reuid=" + user, "--regid=" + user, "--init-groups", "--", "/usr/bin/otelcol-iclens"}, strings.Fields(options)...)
	cmd := exec.Command("setpriv", args...)
	cmd.Env = env
	cmd.Dir = stateDir
	logs := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			assert.NoError(t, err, "clean exit on SIGTERM")
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("no exit 15 s after SIGTERM")
		}
		if t.Failed() {
			t.Logf("collector log:\n%s", logs.String())
		}
	}()

	select {
	case err := <-exited:
		t.Fatalf("the installed collector exited: %v\n%s", err, logs.String())
	case <-time.After(8 * time.Second):
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	require.NoError(t, err)
	assert.Regexp(t, fmt.Sprintf(`(?m)^Uid:\s+%d\s`, uid), string(status), "runs as %s", user)
	for _, u := range []string{"http://" + health + "/", "http://" + prom + "/metrics", "http://" + tel + "/metrics", "http://" + view + "/"} {
		resp, err := http.Get(u)
		if assert.NoError(t, err, u) {
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, u)
		}
	}
	out := logs.String()
	assert.NotContains(t, out, "\terror\t")
	assert.NotContains(t, out, "\twarn\t")
}
