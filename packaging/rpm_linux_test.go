//go:build linux

package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstalledRpm installs the built .rpm on this machine with rpm (Debian's rpm package keeps its
// own database; --nodeps because no rpm here provides glibc, which the package depends on), checks
// its files, configuration files, scriptlets, user and unit as TestInstalledDeb does, runs the
// installed binary as its user, reinstalls it over an edited configuration and erases it.
func TestInstalledRpm(t *testing.T) {
	pkg := os.Getenv("ICLENS_RPM")
	if pkg == "" {
		t.Skip("ICLENS_RPM is not set: .ci/run sets it to the package `make package` built")
	}
	require.Zero(t, os.Geteuid(), "rpm -i needs root")
	_, err := exec.Command("rpm", "-q", "otelcol-iclens").CombinedOutput()
	require.Error(t, err, "otelcol-iclens is already installed with rpm on this machine; the test installs and erases it")
	_, err = exec.Command("dpkg-query", "-W", "otelcol-iclens").CombinedOutput()
	require.Error(t, err, "otelcol-iclens is installed with dpkg on this machine; the test installs and erases it with rpm")
	t.Cleanup(func() {
		_ = exec.Command("rpm", "-e", "--nodeps", "otelcol-iclens").Run()
		// rpm leaves what an erase keeps by design: the edited configuration (.rpmsave), the state
		// and the user (the distributions' packaging guidelines keep users after an erase).
		_ = os.RemoveAll(confDir)
		_ = os.RemoveAll(stateDir)
		_ = exec.Command("userdel", user).Run()
		_ = exec.Command("groupdel", user).Run()
	})

	// What the package declares, before it is installed.
	info := run(t, "rpm", "-qp", "--qf", "%{NAME} %{ARCH} %{LICENSE}\n", pkg)
	assert.Regexp(t, `^otelcol-iclens (x86_64|aarch64) Apache-2.0\n$`, info)
	scripts := run(t, "rpm", "-qp", "--scripts", pkg)
	for _, s := range []string{"preinstall scriptlet", "postinstall scriptlet", "preuninstall scriptlet", "postuninstall scriptlet",
		"useradd --system", "systemctl enable --now otelcol-iclens.service"} {
		assert.Contains(t, scripts, s)
	}

	run(t, "rpm", "-i", "--nodeps", pkg)

	files := run(t, "rpm", "-ql", "otelcol-iclens")
	for _, f := range []string{"/usr/bin/otelcol-iclens", confDir + "/config.yaml", confDir + "/otelcol-iclens.conf", unitPath,
		"/usr/share/licenses/otelcol-iclens/LICENSE", "/usr/share/doc/otelcol-iclens/README.md"} {
		assert.Contains(t, files, f+"\n")
		_, err := os.Stat(f)
		assert.NoError(t, err, f)
	}
	assert.NotContains(t, files, "/usr/share/doc/otelcol-iclens/copyright", "the licence of an rpm is under /usr/share/licenses")
	configs := run(t, "rpm", "-qc", "otelcol-iclens")
	assert.Contains(t, configs, confDir+"/config.yaml\n")
	assert.Contains(t, configs, confDir+"/otelcol-iclens.conf\n")
	// rpm -V: every installed file as the package says (size, digest, mode, owner).
	run(t, "rpm", "-V", "--nodeps", "otelcol-iclens")

	uid := checkUserAndUnit(t)
	runInstalled(t, uid)

	// A reinstall over an edited configuration keeps the edit (%config(noreplace); the packaged
	// file is the one already installed, so rpm writes no .rpmnew beside it).
	editConfig(t)
	run(t, "rpm", "-U", "--replacepkgs", "--nodeps", pkg)
	assert.True(t, isEdited(t, confDir+"/config.yaml"), "the reinstall replaced the edited config.yaml")
	checkUserAndUnit(t)

	// Erase: the package's files go, the edited configuration is kept as .rpmsave.
	run(t, "rpm", "-e", "--nodeps", "otelcol-iclens")
	for _, p := range []string{"/usr/bin/otelcol-iclens", unitPath, confDir + "/otelcol-iclens.conf"} {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "%s is left after the erase", p)
	}
	assert.True(t, isEdited(t, filepath.Join(confDir, "config.yaml.rpmsave")), "the edited config.yaml is kept as .rpmsave")
	assert.Error(t, exec.Command("rpm", "-q", "otelcol-iclens").Run(), "rpm still lists the package")
}
