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

	"github.com/otelcol-iclens/otelcol-iclens/internal/yamltree"
)

// The gateway Component (gateway/): the nodes export to one gateway collector that runs the
// diagnosis and the cluster view. These checks need no cluster.

// collectorConfig is the collector configuration a ConfigMap file carries under key.
func collectorConfig(t *testing.T, path, key string) (raw string, parsed map[string]any) {
	t.Helper()
	raw, _ = yamltree.Get(yamltree.Load(t, path), "data", key).(string)
	require.NotEmpty(t, raw, "%s: data.%s", path, key)
	require.NoError(t, yaml.Unmarshal([]byte(raw), &parsed))
	return raw, parsed
}

func TestGatewayComponentListsExistingFiles(t *testing.T) {
	k := yamltree.Load(t, "gateway/kustomization.yaml")
	assert.Equal(t, "Component", k["kind"])
	for _, r := range k["resources"].([]any) {
		_, err := os.Stat(filepath.Join("gateway", r.(string)))
		assert.NoError(t, err)
	}
	targets := map[string]string{}
	for _, p := range k["patches"].([]any) {
		path := filepath.Join("gateway", yamltree.Get(p, "path").(string))
		m := yamltree.Load(t, path)
		targets[m["kind"].(string)] = yamltree.Get(m, "metadata", "name").(string)
	}
	assert.Equal(t, map[string]string{"ConfigMap": "otelcol-iclens", "DaemonSet": "otelcol-iclens"}, targets,
		"the patches change the parent's node ConfigMap and DaemonSet")
	base, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	assert.Contains(t, string(base), "#   - gateway", "the parent kustomization says how to turn the component on")
}

// TestGatewayNodeConfig: in gateway mode the nodes read what they read without one (the parent
// ConfigMap's receivers and processors), evaluate nothing themselves, and send every metric to
// the gateway with their client certificate.
func TestGatewayNodeConfig(t *testing.T) {
	_, base := collectorConfig(t, "configmap.yaml", "config.yaml")
	raw, node := collectorConfig(t, "gateway/node-configmap.yaml", "config.yaml")
	assert.Equal(t, base["receivers"], node["receivers"])
	assert.Equal(t, base["processors"], node["processors"])
	assert.Nil(t, node["connectors"], "the gateway runs the diagnosis, the nodes do not")
	assert.Equal(t, []any{"otlp_grpc/gateway"}, yamltree.Get(node, "service", "pipelines", "metrics", "exporters"))
	tls := yamltree.Get(node, "exporters", "otlp_grpc/gateway", "tls").(map[string]any)
	for _, k := range []string{"ca_file", "cert_file", "key_file"} {
		assert.True(t, strings.HasPrefix(tls[k].(string), "/etc/otelcol-iclens-tls/"), "%s in the mounted Secret", k)
	}

	// Every ${env:X} the config reads is set by the DaemonSet or the component's patch of it.
	set := map[string]bool{}
	for _, f := range []string{"daemonset.yaml", "gateway/node-daemonset.yaml"} {
		for _, c := range yamltree.Get(yamltree.Load(t, f), "spec", "template", "spec", "containers").([]any) {
			for _, e := range yamltree.Get(c, "env").([]any) {
				set[yamltree.Get(e, "name").(string)] = true
			}
		}
	}
	for _, part := range strings.Split(raw, "${env:")[1:] {
		name, _, _ := strings.Cut(part, "}")
		assert.True(t, set[name], "the node config reads %s, which the DaemonSet does not set", name)
	}
	validate(t, raw, "K8S_POD_IP=10.0.0.7", "K8S_NODE_NAME=gpu-node-1", "ICLENS_DCGM_ENDPOINT=localhost:5555",
		"ICLENS_GATEWAY_OTLP_ENDPOINT=otelcol-iclens-gateway.otelcol-iclens.svc:4317", "ICLENS_TRACES_OTLP_ENDPOINT=tempo:4317")
}

// TestGatewayConfig: the gateway's ConfigMap is the distribution's gateway.yaml with the
// cluster's addresses: the same pipelines into the diagnosis and the view; its OTLP receiver,
// on the cluster network, takes only clients with a certificate; the view stays on loopback.
func TestGatewayConfig(t *testing.T) {
	raw, gw := collectorConfig(t, "gateway/gateway-configmap.yaml", "gateway.yaml")
	b, err := os.ReadFile(filepath.Join("..", "..", "distributions", "otelcol-iclens", "gateway.yaml"))
	require.NoError(t, err)
	var dist map[string]any
	require.NoError(t, yaml.Unmarshal(b, &dist))
	for _, p := range []string{"metrics", "metrics/diagnosis"} {
		assert.Equal(t, yamltree.Get(dist, "service", "pipelines", p), yamltree.Get(gw, "service", "pipelines", p), p)
	}
	for name, p := range yamltree.Get(gw, "receivers", "otlp", "protocols").(map[string]any) {
		// The pod's IP: on the cluster network.
		host, _, err := net.SplitHostPort(strings.ReplaceAll(yamltree.Get(p, "endpoint").(string), "${env:K8S_POD_IP}", "10.0.0.9"))
		require.NoError(t, err)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			continue
		}
		assert.NotEmpty(t, yamltree.Get(p, "tls", "client_ca_file"), "otlp %s is on the cluster network without client certificates", name)
	}
	host, _, err := net.SplitHostPort(yamltree.Get(gw, "exporters", "lensview", "endpoint").(string))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host, "the view has no authentication: loopback, reached by kubectl port-forward")
	validate(t, raw, "K8S_POD_IP=10.0.0.9", "ICLENS_LOGS_OTLP_ENDPOINT=http://loki:3100/otlp")
}

// TestGatewayDeployment: the gateway reads no hardware, so it runs with no privilege at all, one
// replica at a time, and the Service reaches its OTLP port.
func TestGatewayDeployment(t *testing.T) {
	d := yamltree.Load(t, "gateway/gateway-deployment.yaml")
	assert.Equal(t, "Deployment", d["kind"])
	assert.Equal(t, 1, yamltree.Get(d, "spec", "replicas"))
	assert.Equal(t, "Recreate", yamltree.Get(d, "spec", "strategy", "type"), "never two gateways sharing the nodes' points")
	pod := yamltree.Get(d, "spec", "template", "spec").(map[string]any)
	assert.Nil(t, pod["hostNetwork"])
	assert.Equal(t, true, yamltree.Get(pod, "securityContext", "runAsNonRoot"))
	for _, v := range pod["volumes"].([]any) {
		assert.Nil(t, yamltree.Get(v, "hostPath"), "no host path")
	}
	containers := pod["containers"].([]any)
	require.Len(t, containers, 1)
	c := containers[0]
	assert.Equal(t, false, yamltree.Get(c, "securityContext", "allowPrivilegeEscalation"))
	assert.Equal(t, true, yamltree.Get(c, "securityContext", "readOnlyRootFilesystem"))
	assert.Equal(t, []any{"ALL"}, yamltree.Get(c, "securityContext", "capabilities", "drop"))
	assert.Nil(t, yamltree.Get(c, "securityContext", "capabilities", "add"))
	for _, r := range []string{"cpu", "memory"} {
		assert.NotEmpty(t, yamltree.Get(c, "resources", "limits", r), r)
	}
	ports := map[string]bool{}
	for _, p := range yamltree.Get(c, "ports").([]any) {
		ports[yamltree.Get(p, "name").(string)] = true
	}

	s := yamltree.Load(t, "gateway/gateway-service.yaml")
	assert.Equal(t, yamltree.Get(d, "spec", "selector", "matchLabels"), yamltree.Get(s, "spec", "selector"), "the Service selects the gateway's pods")
	for _, p := range yamltree.Get(s, "spec", "ports").([]any) {
		assert.True(t, ports[yamltree.Get(p, "targetPort").(string)], "the Service's target port %v is the container's", yamltree.Get(p, "targetPort"))
	}
	ep, _ := yamltree.Get(yamltree.Load(t, "gateway/node-daemonset.yaml"), "spec", "template", "spec", "containers").([]any)
	require.NotEmpty(t, ep)
	assert.Contains(t, strings.Join(envValues(ep[0]), " "), yamltree.Get(s, "metadata", "name").(string)+"."+yamltree.Get(s, "metadata", "namespace").(string)+".svc:4317",
		"the nodes send to the Service")
}

func envValues(container any) []string {
	var out []string
	for _, e := range yamltree.Get(container, "env").([]any) {
		if v, ok := yamltree.Get(e, "value").(string); ok {
			out = append(out, v)
		}
	}
	return out
}

// TestGatewayComponentRenders renders the parent kustomization with the component turned on,
// where kubectl is installed (kubectl kustomize needs no cluster).
func TestGatewayComponentRenders(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl: the kustomize rendering is not checked")
	}
	dir := t.TempDir()
	for _, sub := range []string{".", "gateway"} {
		files, err := filepath.Glob(filepath.Join(sub, "*.yaml"))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			if f == "kustomization.yaml" {
				b = []byte(strings.Replace(strings.Replace(string(b), "# components:", "components:", 1), "#   - gateway", "  - gateway", 1))
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
		}
	}
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	rendered := string(out)
	for _, want := range []string{"name: otelcol-iclens-gateway", "kind: Service", "otlp_grpc/gateway", "ICLENS_GATEWAY_OTLP_ENDPOINT", "secretName: otelcol-iclens-node-tls"} {
		assert.Contains(t, rendered, want)
	}
	// The node ConfigMap is the component's: no diagnosis connector on the nodes.
	var docs []map[string]any
	dec := yaml.NewDecoder(strings.NewReader(rendered))
	for {
		var m map[string]any
		if dec.Decode(&m) != nil {
			break
		}
		docs = append(docs, m)
	}
	for _, m := range docs {
		if m["kind"] == "ConfigMap" && yamltree.Get(m, "metadata", "name") == "otelcol-iclens" {
			assert.NotContains(t, yamltree.Get(m, "data", "config.yaml"), "diagnosis:")
		}
	}
}

// validate runs the built collector's validate on a config, where ICLENS_COLLECTOR names it.
func validate(t *testing.T, cfg string, env ...string) {
	t.Helper()
	bin := os.Getenv("ICLENS_COLLECTOR")
	if bin == "" {
		t.Log("ICLENS_COLLECTOR is not set: the built collector's validate is skipped")
		return
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", out)
}
