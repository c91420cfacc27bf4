// Package kubernetes_test checks the Kubernetes example without a cluster: the manifests parse,
// the DaemonSet asks for exactly the privileges README.md explains and no more, the patches
// target it, and the ConfigMap's collector config passes the built collector's validation when
// ICLENS_COLLECTOR names it.
package kubernetes_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The subset of the API objects the test looks at.
type (
	container struct {
		Name            string `yaml:"name"`
		SecurityContext struct {
			RunAsUser                *int  `yaml:"runAsUser"`
			Privileged               *bool `yaml:"privileged"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Add  []string `yaml:"add"`
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
		Env []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int32  `yaml:"containerPort"`
		} `yaml:"ports"`
	}
	object struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
		Data map[string]string `yaml:"data"`
		Spec struct {
			Template struct {
				Spec struct {
					HostNetwork    bool        `yaml:"hostNetwork"`
					HostPID        bool        `yaml:"hostPID"`
					InitContainers []container `yaml:"initContainers"`
					Containers     []container `yaml:"containers"`
					Volumes        []struct {
						Name      string                 `yaml:"name"`
						HostPath  *struct{ Path string } `yaml:"hostPath"`
						ConfigMap *struct{ Name string } `yaml:"configMap"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
		Resources []string `yaml:"resources"`
		Patches   []struct {
			Path string `yaml:"path"`
		} `yaml:"patches"`
	}
)

func loadObjects(t *testing.T, path string) []object {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var objs []object
	dec := yaml.NewDecoder(f)
	for {
		var o object
		if err := dec.Decode(&o); err != nil {
			require.Equal(t, "EOF", err.Error(), path)
			return objs
		}
		objs = append(objs, o)
	}
}

func TestManifestsParse(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 5)
	for _, f := range files {
		for _, o := range loadObjects(t, f) {
			assert.NotEmpty(t, o.Kind, f)
		}
	}
}

func TestKustomizationListsExistingFiles(t *testing.T) {
	k := loadObjects(t, "kustomization.yaml")[0]
	for _, r := range k.Resources {
		_, err := os.Stat(r)
		assert.NoError(t, err)
	}
	for _, p := range k.Patches {
		patch := loadObjects(t, p.Path)[0]
		assert.Equal(t, "DaemonSet", patch.Kind, p.Path)
		assert.Equal(t, "otelcol-iclens", patch.Metadata.Name, p.Path)
	}
}

// TestDaemonSetPrivileges pins the collector's privileges to what README.md explains.
func TestDaemonSetPrivileges(t *testing.T) {
	ds := loadObjects(t, "daemonset.yaml")[0]
	require.Equal(t, "DaemonSet", ds.Kind)
	spec := ds.Spec.Template.Spec
	assert.True(t, spec.HostNetwork, "ethtool statistics need the node's network namespace")
	assert.False(t, spec.HostPID)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	sc := c.SecurityContext
	assert.False(t, sc.Privileged != nil && *sc.Privileged, "never privileged")
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []string{"ALL"}, sc.Capabilities.Drop)
	assert.Equal(t, []string{"PERFMON"}, sc.Capabilities.Add, "CAP_PERFMON only")
	require.NotNil(t, sc.ReadOnlyRootFilesystem)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	for _, r := range []string{"cpu", "memory"} {
		assert.NotEmpty(t, c.Resources.Requests[r], "request %s", r)
		assert.NotEmpty(t, c.Resources.Limits[r], "limit %s", r)
	}

	// Host paths: /sys and /proc read-only, under the receivers' root_path; the exporters'
	// queue writable, where the ConfigMap's file_storage keeps it.
	hostPaths := map[string]string{} // volume -> host path
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	const queue = "/var/lib/otelcol-iclens"
	const podResources = "/var/lib/kubelet/pod-resources"
	assert.ElementsMatch(t, []string{"/sys", "/proc", queue, podResources}, values(hostPaths))
	for _, m := range c.VolumeMounts {
		hp, ok := hostPaths[m.Name]
		switch {
		case !ok:
		case hp == queue:
			assert.False(t, m.ReadOnly, "the queue is written")
			assert.Equal(t, queue, m.MountPath)
		case hp == podResources:
			// The kubelet's socket at its own path (the owner receiver's default), read-only.
			assert.True(t, m.ReadOnly, "the pod-resources socket is mounted read-only")
			assert.Equal(t, podResources, m.MountPath)
		default:
			assert.True(t, m.ReadOnly, "%s must be read-only", hp)
			assert.Equal(t, "/hostfs"+hp, m.MountPath)
		}
	}
	cfg := loadObjects(t, "configmap.yaml")[0].Data["config.yaml"]
	assert.Contains(t, cfg, "directory: "+queue, "file_storage keeps the queue in the mounted host directory")
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestConfigMapConfig checks the collector config in the ConfigMap: root_path matches the
// mounts, and the built collector accepts it.
func TestConfigMapConfig(t *testing.T) {
	cm := loadObjects(t, "configmap.yaml")[0]
	cfg := cm.Data["config.yaml"]
	require.NotEmpty(t, cfg)
	var parsed struct {
		Receivers map[string]map[string]any `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cfg), &parsed))
	for _, r := range []string{"rnic", "cpuuncore", "gpu", "owner"} {
		assert.Equal(t, "/hostfs", parsed.Receivers[r]["root_path"], r)
	}

	// Every ${env:X} the config uses is set by the DaemonSet.
	ds := loadObjects(t, "daemonset.yaml")[0]
	set := map[string]bool{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		set[e.Name] = true
	}
	for _, part := range strings.Split(cfg, "${env:")[1:] {
		name, _, _ := strings.Cut(part, "}")
		name, _, _ = strings.Cut(name, ":-")
		assert.True(t, set[name], "the config reads %s, which the DaemonSet does not set", name)
	}

	bin := os.Getenv("ICLENS_COLLECTOR")
	if bin == "" {
		t.Skip("ICLENS_COLLECTOR is not set: `make test` builds bin/otelcol-iclens; the built collector's validate is skipped")
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Env = append(os.Environ(), "K8S_POD_IP=10.0.0.7", "K8S_NODE_NAME=gpu-node-1",
		"ICLENS_DCGM_ENDPOINT=localhost:5555",
		"ICLENS_METRICS_OTLP_ENDPOINT=http://prometheus:9090/api/v1/otlp",
		"ICLENS_TRACES_OTLP_ENDPOINT=tempo:4317",
		"ICLENS_LOGS_OTLP_ENDPOINT=http://loki:3100/otlp")
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, string(out))
}

// TestOTLPNotExposed: with hostNetwork the pod's IP is the node's, reachable from the cluster
// network, and the OTLP receiver authenticates nobody. Each of its protocols must listen on the
// loopback, or, where it is exposed, require TLS with client certificates (client_ca_file).
func TestOTLPNotExposed(t *testing.T) {
	cm := loadObjects(t, "configmap.yaml")[0]
	var parsed struct {
		Receivers map[string]struct {
			Protocols map[string]struct {
				Endpoint string `yaml:"endpoint"`
				TLS      struct {
					ClientCAFile string `yaml:"client_ca_file"`
				} `yaml:"tls"`
			} `yaml:"protocols"`
		} `yaml:"receivers"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &parsed))
	otlp, ok := parsed.Receivers["otlp"]
	require.True(t, ok, "the ConfigMap has an otlp receiver")
	require.NotEmpty(t, otlp.Protocols)
	for name, p := range otlp.Protocols {
		host, _, err := net.SplitHostPort(p.Endpoint)
		require.NoError(t, err, name)
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			continue
		}
		assert.NotEmpty(t, p.TLS.ClientCAFile, "otlp %s listens on %s without client certificates", name, p.Endpoint)
	}
	for _, port := range loadObjects(t, "daemonset.yaml")[0].Spec.Template.Spec.Containers[0].Ports {
		assert.NotContains(t, []int32{4317, 4318}, port.ContainerPort, "the DaemonSet publishes an OTLP port")
	}
}
