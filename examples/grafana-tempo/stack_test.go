// Package grafanatempo_test checks the Grafana/Tempo example without running it (the development
// machines and CI have no container engine): every file parses, every path it mounts exists, the
// files agree with each other (data source uids, mount points, profiles), and the collector
// configs pass the built collector's own validation when ICLENS_COLLECTOR names it.
package grafanatempo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/yamltree"
)

func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func TestEveryYAMLFileParses(t *testing.T) {
	n := 0
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		dec := yaml.NewDecoder(f)
		for {
			var doc any
			if err := dec.Decode(&doc); err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: %v", path, err)
				}
				break
			}
		}
		n++
		return nil
	}))
	assert.GreaterOrEqual(t, n, 7)
}

func TestCompose(t *testing.T) {
	c := yamltree.Load(t, "docker-compose.yaml")
	services, _ := c["services"].(map[string]any)
	require.NotEmpty(t, services)

	for _, s := range []string{"prometheus", "tempo", "grafana"} {
		require.Contains(t, services, s)
		assert.Nil(t, yamltree.Get(services, s, "profiles"), "%s runs in both modes", s)
	}
	assert.Contains(t, strs(yamltree.Get(services, "prometheus", "command")), "--web.enable-otlp-receiver")

	replays, reals := 0, 0
	for name, svc := range services {
		profiles := strs(yamltree.Get(svc, "profiles"))
		switch {
		case strings.HasPrefix(name, "replay-"):
			replays++
			assert.Equal(t, []string{"replay"}, profiles, name)
			// Service names are DNS names (hyphens); the simulator's case names have underscores.
			assert.Equal(t, strings.ReplaceAll(strings.TrimPrefix(name, "replay-"), "-", "_"), yamltree.Get(svc, "environment", "ICLENS_CASE"),
				"%s: ICLENS_CASE names the recording folder and the host names", name)
			assert.Equal(t, []string{"--config", "/etc/otelcol-iclens/replay.yaml"}, strs(yamltree.Get(svc, "command")), name)
			assert.Contains(t, strs(yamltree.Get(svc, "volumes")), "./otelcol/replay.yaml:/etc/otelcol-iclens/replay.yaml:ro", name)
		case slices.Contains(profiles, "real"):
			reals++
			assert.Equal(t, "host", yamltree.Get(svc, "network_mode"), "%s: ethtool needs the host's network namespace", name)
			assert.Equal(t, []string{"ALL"}, strs(yamltree.Get(svc, "cap_drop")), name)
			assert.Equal(t, []string{"PERFMON"}, strs(yamltree.Get(svc, "cap_add")), "%s: CAP_PERFMON and nothing else", name)
			assert.Nil(t, yamltree.Get(svc, "privileged"), name)
			vols := strs(yamltree.Get(svc, "volumes"))
			assert.Contains(t, vols, "/sys:/hostfs/sys:ro")
			assert.Contains(t, vols, "/proc:/hostfs/proc:ro")
		}
		// Every relative bind mount and build file exists (sources with variables are the
		// user's to provide, such as the recordings folder).
		for _, v := range strs(yamltree.Get(svc, "volumes")) {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") && !strings.Contains(src, "$") {
				_, err := os.Stat(src)
				assert.NoError(t, err, "%s mounts %s", name, src)
			}
		}
		if ctx, ok := yamltree.Get(svc, "build", "context").(string); ok {
			_, err := os.Stat(filepath.Join(ctx, yamltree.Get(svc, "build", "dockerfile").(string)))
			assert.NoError(t, err, "%s: build", name)
		}
	}
	assert.GreaterOrEqual(t, replays, 4, "one replaying collector per case")
	assert.Equal(t, 1, reals, "one real-mode collector")

	env, err := os.ReadFile(".env")
	require.NoError(t, err)
	assert.Contains(t, string(env), "\nCOMPOSE_PROFILES=replay\n", "replay is the default mode")

	// Grafana's home dashboard is the generated one, in the mounted folder.
	home := yamltree.Get(services, "grafana", "environment", "GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH").(string)
	assert.Contains(t, strs(yamltree.Get(services, "grafana", "volumes")), "./grafana/dashboards:"+filepath.Dir(home)+":ro")
	_, err = os.Stat(filepath.Join("grafana", "dashboards", filepath.Base(home)))
	assert.NoError(t, err)
}

func TestGrafanaProvisioning(t *testing.T) {
	ds := yamltree.Load(t, "grafana/provisioning/datasources/datasources.yaml")
	uids := map[string]string{} // type -> uid
	var tempo any
	for _, d := range ds["datasources"].([]any) {
		typ, uid := yamltree.Get(d, "type").(string), yamltree.Get(d, "uid").(string)
		uids[typ] = uid
		if typ == "tempo" {
			tempo = d
		}
	}
	require.Contains(t, uids, "prometheus")
	require.Contains(t, uids, "tempo")

	t2m := yamltree.Get(tempo, "jsonData", "tracesToMetrics")
	assert.Equal(t, uids["prometheus"], yamltree.Get(t2m, "datasourceUid"), "traces-to-metrics points at Prometheus")
	require.NotEmpty(t, yamltree.Get(t2m, "queries"))
	for _, q := range yamltree.Get(t2m, "queries").([]any) {
		// Grafana expands $VARS in provisioning files: the query's $__tags must be written $$__tags.
		expr := yamltree.Get(q, "query").(string)
		assert.Contains(t, expr, "{$$__tags}", expr)
		assert.NotContains(t, strings.ReplaceAll(expr, "$$", ""), "$", "unescaped $ in %s", expr)
	}
	found := false
	for _, tag := range yamltree.Get(t2m, "tags").([]any) {
		found = found || (yamltree.Get(tag, "key") == "host.name" && yamltree.Get(tag, "value") == "host_name")
	}
	assert.True(t, found, "span host.name must map to the metrics' host_name label")

	for _, d := range ds["datasources"].([]any) {
		if yamltree.Get(d, "type") == "prometheus" {
			for _, e := range yamltree.Get(d, "jsonData", "exemplarTraceIdDestinations").([]any) {
				assert.Equal(t, uids["tempo"], yamltree.Get(e, "datasourceUid"))
			}
		}
	}

	dash := yamltree.Load(t, "grafana/provisioning/dashboards/iclens.yaml")
	path := yamltree.Get(dash["providers"].([]any)[0], "options", "path").(string)
	c := yamltree.Load(t, "docker-compose.yaml")
	assert.Contains(t, strs(yamltree.Get(c, "services", "grafana", "volumes")), "./grafana/dashboards:"+path+":ro")
}

func TestPrometheusConfig(t *testing.T) {
	p := yamltree.Load(t, "prometheus/prometheus.yml")
	assert.Contains(t, strs(yamltree.Get(p, "otlp", "promote_resource_attributes")), "host.name",
		"host.name must become label host_name: the dashboard's $node")
}

// TestCollectorConfigs checks that every component a pipeline names is defined, where the
// replaying receivers read, and, with the built collector, its own validation.
func TestCollectorConfigs(t *testing.T) {
	for _, f := range []string{"otelcol/replay.yaml", "otelcol/real.yaml"} {
		cfg := yamltree.Load(t, f)
		for pname, p := range yamltree.Get(cfg, "service", "pipelines").(map[string]any) {
			for _, kind := range []string{"receivers", "processors", "exporters"} {
				for _, id := range strs(yamltree.Get(p, kind)) {
					// A connector (the diagnosis) is both a pipeline's exporter and another's receiver.
					defined := yamltree.Get(cfg, kind, id) != nil || (kind != "processors" && yamltree.Get(cfg, "connectors", id) != nil)
					assert.True(t, defined, "%s: pipeline %s uses undefined %s %s", f, pname, kind, id)
				}
			}
		}
	}

	replay := yamltree.Load(t, "otelcol/replay.yaml")
	n := 0
	for id, r := range replay["receivers"].(map[string]any) {
		if id == "otlp" {
			continue
		}
		n++
		typ, node, _ := strings.Cut(id, "/")
		// tools/simulate's layout: <dir>/<case>/<node>-<receiver>.jsonl.
		assert.Equal(t, "/recordings/${env:ICLENS_CASE}/"+node+"-"+typ+".jsonl", yamltree.Get(r, "recording", "replay"), id)
		assert.Equal(t, true, yamltree.Get(r, "recording", "loop"), id)
	}
	assert.Equal(t, 6, n, "three receivers for each of two nodes")

	bin := os.Getenv("ICLENS_COLLECTOR")
	if bin == "" {
		t.Skip("ICLENS_COLLECTOR is not set: `make test` builds bin/otelcol-iclens; the built collector's validate is skipped")
	}
	validate := func(f string, env ...string) (string, error) {
		cmd := exec.Command(bin, "validate", "--config", f)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := validate("otelcol/real.yaml", "HOSTNAME=node1")
	assert.NoError(t, err, out)
	out, err = validate("otelcol/replay.yaml", "ICLENS_CASE=healthy_allreduce")
	assert.NoError(t, err, out)
}

// TestComposeConfig runs the compose CLI's own validation where one is installed (docker compose
// or docker-compose; neither needs the engine for `config`).
func TestComposeConfig(t *testing.T) {
	var cli []string
	if exec.Command("docker", "compose", "version").Run() == nil {
		cli = []string{"docker", "compose"}
	} else if p, err := exec.LookPath("docker-compose"); err == nil {
		cli = []string{p}
	} else {
		t.Skip("no docker compose CLI")
	}
	for _, c := range []struct {
		profiles string
		files    []string
	}{
		{"replay", []string{"docker-compose.yaml"}},
		{"real", []string{"docker-compose.yaml"}},
		{"real", []string{"docker-compose.yaml", "docker-compose.gpu.yaml"}},
	} {
		args := append([]string{}, cli[1:]...)
		for _, f := range c.files {
			args = append(args, "-f", f)
		}
		cmd := exec.Command(cli[0], append(args, "config", "-q")...)
		cmd.Env = append(os.Environ(), "COMPOSE_PROFILES="+c.profiles)
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%v %s: %s", c.files, c.profiles, out)
	}
}
