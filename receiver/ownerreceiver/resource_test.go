package ownerreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// TestOwnerResource: with owner_resource, GPUs 0-3 of job 4711 and GPUs 4-7 of pod ml/trainer (a
// static file) come as one resource per owner: the job's with job.id, the pod's with
// k8s.namespace.name and k8s.pod.name (what contrib's k8sattributes processor associates by),
// each holding exactly the points of its devices; shared and node devices stay on a resource
// without owner. The points are the same as without the option.
func TestOwnerResource(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	var b strings.Builder
	b.WriteString("devices:\n")
	for i := 0; i < 8; i++ {
		if i < 4 {
			b.WriteString("  - {device: \"" + strconv.Itoa(i) + "\", job_id: \"4711\"}\n")
		} else {
			b.WriteString("  - {device: \"" + strconv.Itoa(i) + "\", namespace: ml, pod: trainer, container: main}\n")
		}
	}
	static := filepath.Join(t.TempDir(), "owners.yaml")
	require.NoError(t, os.WriteFile(static, []byte(b.String()), 0o600))

	scrape := func(perOwner bool) (map[string]point, map[string]map[string]any, map[string]map[string]bool) {
		cfg := createDefaultConfig().(*Config)
		cfg.RootPath = root
		cfg.Static.Enabled = true
		cfg.Static.Path = static
		cfg.OwnerResource = perOwner
		require.NoError(t, cfg.Validate())
		s := newOwnerScraper(cfg, receivertest.NewNopSettings(metadata.Type))
		require.NoError(t, s.start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		resources := map[string]map[string]any{}
		owners := map[string]map[string]bool{} // resource -> the owners of its points
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			attrs := rms.At(i).Resource().Attributes().AsRaw()
			key := ""
			if v, ok := attrs["job.id"]; ok {
				key = "job " + v.(string)
			}
			if v, ok := attrs["k8s.pod.name"]; ok {
				key = "pod " + attrs["k8s.namespace.name"].(string) + "/" + v.(string)
			}
			require.NotContains(t, resources, key, "one resource per owner")
			resources[key] = attrs
			owners[key] = map[string]bool{}
			ms := rms.At(i).ScopeMetrics().At(0).Metrics()
			for j := range ms.Len() {
				dps := ms.At(j).Gauge().DataPoints()
				for k := range dps.Len() {
					a := dps.At(k).Attributes().AsRaw()
					owners[key][a["owner.kind"].(string)+" "+a["job.id"].(string)+a["k8s.pod.name"].(string)] = true
				}
			}
		}
		return points(t, md), resources, owners
	}

	plain, plainResources, _ := scrape(false)
	assert.Len(t, plainResources, 1, "off: one resource")
	got, resources, owners := scrape(true)
	assert.Equal(t, plain, got, "the same points either way")
	assert.Equal(t, map[string]map[string]any{
		"":               {},
		"job 4711":       {"job.id": "4711"},
		"pod ml/trainer": {"k8s.namespace.name": "ml", "k8s.pod.name": "trainer"},
	}, resources)
	assert.Equal(t, map[string]bool{"job 4711": true}, owners["job 4711"])
	assert.Equal(t, map[string]bool{"pod trainer": true}, owners["pod ml/trainer"])
	for o := range owners[""] {
		assert.True(t, strings.HasPrefix(o, "shared") || strings.HasPrefix(o, "node"), "%s on the receiver's own resource", o)
	}
}
