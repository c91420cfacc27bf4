package packaging_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerfileInstruction is one instruction of a Dockerfile: its keyword (upper case) and its
// arguments, continuation lines joined (Dockerfile reference, "Format" and "Parser directives").
type dockerfileInstruction struct{ keyword, args string }

func readDockerfile(t *testing.T, path string) []dockerfileInstruction {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []dockerfileInstruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		kw, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerfileInstruction{strings.ToUpper(kw), strings.TrimSpace(args)})
		cur.Reset()
	}
	require.Zero(t, cur.Len(), "%s ends inside a continued line", path)
	return out
}

// TestDockerfileLeastPrivilege checks the collector's image statically (no Docker engine on the
// CI machines): it runs as a non-root user, holds no file capability or setuid bit, owns its state
// directory, and runs the binary `make build` made on a glibc base (cgo).
func TestDockerfileLeastPrivilege(t *testing.T) {
	path := filepath.Join("..", "distributions", "otelcol-iclens", "Dockerfile")
	ins := readDockerfile(t, path)
	last := map[string]string{}
	var runs []string
	for _, i := range ins {
		last[i.keyword] = i.args
		if i.keyword == "RUN" {
			runs = append(runs, i.args)
		}
	}

	// A numeric user and group (no /etc/passwd entry needed; Kubernetes' runAsNonRoot can only
	// verify a numeric USER), not root.
	m := regexp.MustCompile(`^(\d+):(\d+)$`).FindStringSubmatch(last["USER"])
	require.NotNil(t, m, "USER uid:gid, got %q", last["USER"])
	uid, _ := strconv.Atoi(m[1])
	assert.NotZero(t, uid, "the image runs as root")

	// No privilege comes with the image: no file capability, no setuid bit.
	for _, r := range runs {
		assert.NotContains(t, r, "setcap", "a file capability on the binary")
		assert.NotRegexp(t, `chmod\s+[ug]?\+s|chmod\s+[4-7][0-7]{3}\b`, r, "a setuid or setgid bit")
	}
	// The state directory (the push examples' queue) belongs to the image's user, mode 0700.
	assert.Contains(t, strings.Join(runs, " "), "install -d -o "+m[1]+" -g "+m[2]+" -m 0700 /var/lib/otelcol-iclens")
	assert.Equal(t, "/var/lib/otelcol-iclens", last["WORKDIR"])

	// The binary is cgo (the gpu receiver's dlopen of libdcgm.so.4 / libnvidia-ml.so.1): a glibc base.
	assert.Regexp(t, `^debian:[a-z]+-slim$`, last["FROM"])
	assert.Equal(t, `["/otelcol-iclens"]`, last["ENTRYPOINT"])
	assert.Contains(t, ins, dockerfileInstruction{"COPY", "bin/otelcol-iclens /otelcol-iclens"})
	assert.Equal(t, `["--config", "/etc/otelcol-iclens/config.yaml"]`, last["CMD"])
	for _, port := range []string{"9464", "13133"} {
		assert.Contains(t, last["ENV"], "0.0.0.0:"+port)
		assert.Contains(t, strings.Fields(last["EXPOSE"]), port)
	}
}
