//go:build linux

package packaging_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/syncbuf"
)

// securityScore is what `systemd-analyze security otelcol-iclens` (systemd 252) says of the unit
// running under systemd; README.md ("Packages") gives it beside the offline score.
const securityScore = "3.4 OK"

// capPerfmon is CAP_PERFMON's bit in /proc/PID/status's capability masks (linux/capability.h: 38).
const capPerfmon = "0000004000000000"

// TestDebUnderSystemd installs the .deb under a real systemd and checks the unit as systemd runs
// it: enabled and started by the package's script, running as its user with CAP_PERFMON alone
// (effective, permitted, bounding and ambient), no new privileges, a seccomp filter, the system
// read-only but its state directory, reloaded on `systemctl reload` without a restart, quiet in
// the journal, and stopped cleanly.
//
// CI machines do not boot systemd (PID 1 is the sandbox's init), so systemd runs as PID 1 of a
// container (systemd-nspawn) on this machine's own OS tree: --volatile=yes gives it a fresh root
// in memory, /usr, /etc and /var/lib are overlaid with empty upper directories so that the
// install writes nothing back, --private-network keeps its services (and the collector's
// listeners) off the host's network, and udev does not run in a container.
func TestDebUnderSystemd(t *testing.T) {
	deb := os.Getenv("ICLENS_DEB")
	if deb == "" {
		t.Skip("ICLENS_DEB is not set: .ci/run sets it to the package `make package` built")
	}
	require.Zero(t, os.Geteuid(), "systemd-nspawn needs root")
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		if os.Getenv("ICLENS_REQUIRE_SYSTEMD") == "yes" {
			t.Fatal("systemd-nspawn not found: install Debian's systemd-container")
		}
		t.Skip("systemd-nspawn not found (Debian's systemd-container): the unit is checked without systemd only")
	}
	deb, err = filepath.Abs(deb)
	require.NoError(t, err)

	c := bootContainer(t, nspawn, filepath.Dir(deb))
	c.run(t, "dpkg", "-i", "/run/iclens-pkg/"+filepath.Base(deb))

	// The postinst script enables and starts the service where systemd runs.
	assert.Equal(t, "enabled", strings.TrimSpace(c.output(t, "systemctl", "is-enabled", "otelcol-iclens")))
	pid := c.waitRunning(t)
	uid := strings.Split(strings.TrimSpace(c.run(t, "getent", "passwd", user)), ":")[2]
	status := c.run(t, "cat", fmt.Sprintf("/proc/%d/status", pid))
	for _, want := range []string{
		`(?m)^Uid:\s+` + uid + `\s+` + uid + `\s+` + uid + `\s+` + uid + `$`,
		`(?m)^CapEff:\s+` + capPerfmon + `$`,
		`(?m)^CapPrm:\s+` + capPerfmon + `$`,
		`(?m)^CapBnd:\s+` + capPerfmon + `$`,
		`(?m)^CapAmb:\s+` + capPerfmon + `$`,
		`(?m)^NoNewPrivs:\s+1$`,
		// MemoryDenyWriteExecute, SystemCallArchitectures, RestrictAddressFamilies, ... are
		// seccomp filters: mode 2.
		`(?m)^Seccomp:\s+2$`,
	} {
		assert.Regexp(t, want, status, "/proc/%d/status of the service", pid)
	}

	// The mounts the service sees (ProtectSystem=strict, ReadOnlyPaths=/sys, ProtectHome,
	// StateDirectory): its own mount namespace, read from its mountinfo.
	mounts := mountOptions(c.run(t, "cat", fmt.Sprintf("/proc/%d/mountinfo", pid)))
	for _, ro := range []string{"/usr", "/etc", "/sys", "/home"} {
		assert.Contains(t, strings.Split(mounts[ro], ","), "ro", "%s is read-only to the service (%q)", ro, mounts[ro])
	}
	assert.Contains(t, strings.Split(mounts[stateDir], ","), "rw", "the state directory is writable (%q)", mounts[stateDir])
	assert.Contains(t, mounts, "/tmp", "PrivateTmp: a /tmp of its own")

	out := c.output(t, "systemd-analyze", "security", "--no-pager", "otelcol-iclens")
	assert.Contains(t, out, "Overall exposure level for otelcol-iclens.service: "+securityScore,
		"the score README.md gives; systemd-analyze security says:\n%s", out)

	// systemctl reload: the configuration is re-read in the same process (ExecReload, SIGHUP).
	c.run(t, "systemctl", "reload", "otelcol-iclens")
	c.waitJournal(t, `"signal": "hangup"`)
	assert.Equal(t, strconv.Itoa(pid), c.show(t, "MainPID"), "reloaded, not restarted")
	assert.Equal(t, "0", c.show(t, "NRestarts"))

	// Quiet on a machine without the hardware: no warning or error but the collector's own line
	// on a reload (otelcol collector.go, reloadConfiguration).
	var loud []string
	for _, line := range strings.Split(c.run(t, "journalctl", "--no-pager", "-o", "cat", "-u", "otelcol-iclens"), "\n") {
		if (strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t")) && !strings.Contains(line, "Config updated, restart service") {
			loud = append(loud, line)
		}
	}
	assert.Empty(t, loud, "warnings or errors in the service's journal")

	c.run(t, "systemctl", "stop", "otelcol-iclens")
	assert.Equal(t, "inactive", c.show(t, "ActiveState"))
	assert.Equal(t, "success", c.show(t, "Result"), "a clean exit on stop")
}

// container is a systemd booted by systemd-nspawn: commands run in all its namespaces (nsenter).
type container struct {
	leader int // the container's PID 1, systemd, as the host sees it
}

// bootContainer boots systemd in a container on this machine's OS tree with pkgDir bound
// read-only at /run/iclens-pkg, and powers it off at the end of the test.
func bootContainer(t *testing.T, nspawn, pkgDir string) *container {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, nspawn, "--quiet",
		"--directory=/", "--volatile=yes",
		"--overlay=/usr::/usr", "--overlay=/etc::/etc", "--overlay=/var/lib::/var/lib",
		"--private-network",
		// nspawn's default capability set leaves CAP_PERFMON out; the unit asks for it.
		"--capability=CAP_PERFMON",
		// No systemd on the host to register with (machined) or to create a scope unit.
		"--register=no", "--keep-unit",
		fmt.Sprintf("--machine=iclens-test-%d", os.Getpid()),
		"--bind-ro="+pkgDir+":/run/iclens-pkg",
		"--console=pipe", "--boot", "systemd.firstboot=off")
	console := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = console, console
	// The first SIGTERM asks nspawn to halt the container; the deadline below kills it.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		if err := <-exited; err != nil && ctx.Err() == nil {
			t.Logf("systemd-nspawn: %v", err)
		}
		if t.Failed() {
			t.Logf("container console:\n%s", console.String())
		}
	})

	// The container's PID 1 is nspawn's child; systemd answers once it has set up its manager.
	deadline := time.Now().Add(2 * time.Minute)
	c := &container{}
	for {
		select {
		case err := <-exited:
			exited <- err
			// Before systemd is up nothing of the package has run: a machine that cannot boot a
			// container (no privilege for namespaces, overlayfs) is said, and fails only where
			// ICLENS_REQUIRE_SYSTEMD asks (.ci/run).
			if os.Getenv("ICLENS_REQUIRE_SYSTEMD") != "yes" {
				t.Skipf("systemd-nspawn cannot boot a container on this machine (%v):\n%s", err, console.String())
			}
			t.Fatalf("systemd-nspawn exited before systemd was up: %v\n%s", err, console.String())
		default:
		}
		if c.leader == 0 {
			c.leader = childOf(cmd.Process.Pid)
		}
		if c.leader != 0 {
			// is-system-running --wait returns when the boot is over: "running", or "degraded"
			// where units of this machine's own services fail in a container, which is not ours.
			out, _ := c.command(ctx, "systemctl", "is-system-running", "--wait").CombinedOutput()
			state := strings.TrimSpace(string(out))
			if state == "running" || state == "degraded" {
				return c
			}
		}
		require.True(t, time.Now().Before(deadline), "systemd did not finish booting in the container within 2 minutes:\n%s", console.String())
		time.Sleep(500 * time.Millisecond)
	}
}

// childOf returns the first child of pid, or 0 while it has none.
func childOf(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			n, _ := strconv.Atoi(fields[0])
			return n
		}
	}
	return 0
}

func (c *container) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(c.leader), "--all", "--", name}, args...)...)
}

// run runs a command in the container and fails the test if it fails.
func (c *container) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.command(ctx, name, args...).CombinedOutput()
	require.NoError(t, err, "in the container: %s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// output runs a command in the container and returns what it printed, whatever its exit status
// (systemctl is-enabled and systemd-analyze security exit non-zero to say what they print).
func (c *container) output(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := c.command(ctx, name, args...).CombinedOutput()
	return string(out)
}

// show returns one property of the service (systemctl show).
func (c *container) show(t *testing.T, property string) string {
	t.Helper()
	return strings.TrimSpace(c.run(t, "systemctl", "show", "-P", property, "otelcol-iclens"))
}

// waitRunning waits until the collector has said it is ready and returns its main PID (in the
// container's PID namespace, where the commands run).
func (c *container) waitRunning(t *testing.T) int {
	t.Helper()
	c.waitJournal(t, "Everything is ready")
	require.Equal(t, "active", c.show(t, "ActiveState"))
	pid, err := strconv.Atoi(c.show(t, "MainPID"))
	require.NoError(t, err)
	require.NotZero(t, pid)
	return pid
}

// waitJournal waits up to a minute (a deadline for a hung service, not a speed) for the
// service's journal to hold want.
func (c *container) waitJournal(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		journal := c.run(t, "journalctl", "--no-pager", "-o", "cat", "-u", "otelcol-iclens")
		if strings.Contains(journal, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service's journal has no %q after a minute:\n%s\n%s", want, journal,
				c.output(t, "systemctl", "status", "--no-pager", "otelcol-iclens"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// mountinfoLine splits /proc/PID/mountinfo: mount point (field 5) and mount options (field 6).
var mountinfoLine = regexp.MustCompile(`(?m)^\S+ \S+ \S+ \S+ (\S+) (\S+) `)

// mountOptions maps each mount point of a mountinfo to the options of its last (topmost) mount.
func mountOptions(mountinfo string) map[string]string {
	out := map[string]string{}
	for _, m := range mountinfoLine.FindAllStringSubmatch(mountinfo, -1) {
		out[m[1]] = m[2]
	}
	return out
}
