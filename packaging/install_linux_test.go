//go:build linux

package packaging_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
)

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

	uid := checkUserAndUnit(t)
	runInstalled(t, uid)

	// An upgrade over an edited configuration keeps the edit.
	editConfig(t)
	run(t, "dpkg", "-i", deb)
	assert.True(t, isEdited(t, confDir+"/config.yaml"), "the upgrade replaced the edited config.yaml")

	// Purge: package files, configuration, state and user are gone.
	run(t, "dpkg", "--purge", "otelcol-iclens")
	for _, p := range []string{"/usr/bin/otelcol-iclens", unitPath, confDir, stateDir} {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "%s is left after the purge", p)
	}
	assert.Error(t, exec.Command("getent", "passwd", user).Run(), "the user is left after the purge")
	assert.Error(t, exec.Command("getent", "group", user).Run(), "the group is left after the purge")
}

// configEdit is what an operator's edit of the installed config.yaml appends.
const configEdit = "\n# edited on this node\n"

// editConfig edits the installed config.yaml as an operator would.
func editConfig(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(confDir+"/config.yaml", os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(configEdit)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// isEdited reports whether path holds the operator's edit (editConfig).
func isEdited(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.HasSuffix(string(b), configEdit)
}

// checkUserAndUnit checks what the pre- and post-install scripts and the unit leave on the machine,
// whichever package manager ran them: a system user without a login, owning the state directory,
// and a unit systemd accepts. It returns the user's uid.
func checkUserAndUnit(t *testing.T) int {
	t.Helper()
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
	return uid
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
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Error("no exit a minute after SIGTERM")
		}
		if t.Failed() {
			t.Logf("collector log:\n%s", logs.String())
		}
	}()

	// Ready (the collector says so once every component has started), then up for 8 s more: a
	// busy machine delays the first, and the second only waits, so neither depends on its speed.
	ready := time.Now().Add(2 * time.Minute)
	for !strings.Contains(logs.String(), "Everything is ready") {
		select {
		case err := <-exited:
			t.Fatalf("the installed collector exited: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(ready), "the installed collector is not ready 2 minutes after its start:\n%s", logs.String())
	}
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
