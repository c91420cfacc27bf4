package dashboard

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update rewrites the committed dashboard from the generator: go -C tools test ./dashboard -update
var update = flag.Bool("update", false, "rewrite "+committedJSON+" from the generator")

// committedJSON is what Grafana provisions in the example stack.
const committedJSON = "../../examples/grafana-tempo/grafana/dashboards/iclens.json"

// TestCommittedJSONIsGenerated fails when the committed dashboard is not exactly the generator's
// output: the JSON is never edited by hand, and a change to the generator must come with the
// regenerated file.
func TestCommittedJSONIsGenerated(t *testing.T) {
	got, err := JSON()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(committedJSON), 0o755))
		require.NoError(t, os.WriteFile(committedJSON, got, 0o644))
		t.Logf("wrote %s", committedJSON)
		return
	}
	want, err := os.ReadFile(committedJSON)
	require.NoError(t, err, "run: go -C tools test ./dashboard -update")
	if string(want) != string(got) {
		t.Fatalf("%s differs from the generator's output; run: go -C tools test ./dashboard -update", committedJSON)
	}
}

// TestGenerationIsDeterministic guards the equality test: two runs give the same bytes (no map
// order or counter leaks between builds).
func TestGenerationIsDeterministic(t *testing.T) {
	a, err := JSON()
	require.NoError(t, err)
	b, err := JSON()
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b))
}

// TestDashboardShape checks what Grafana relies on when it loads the file: a stable uid, the
// variables the queries use, unique panel ids, and every Prometheus target on the $datasource.
func TestDashboardShape(t *testing.T) {
	b, err := JSON()
	require.NoError(t, err)
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			Targets []map[string]any `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	assert.Equal(t, UID, d.UID)

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	assert.Equal(t, map[string]string{"datasource": "datasource", "traces": "datasource", "node": "query", "job": "query", "pod": "query"}, vars)

	ids := map[int]string{}
	exprs := 0
	for _, p := range d.Panels {
		require.NotZero(t, p.ID, "panel %q has no id", p.Title)
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		assert.NotEmpty(t, p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			ds, _ := tg["datasource"].(map[string]any)
			switch ds["type"] {
			case "prometheus":
				assert.Equal(t, "${datasource}", ds["uid"], "panel %q", p.Title)
				assert.NotEmpty(t, tg["expr"], "panel %q", p.Title)
				exprs++
			case "tempo":
				assert.Equal(t, "${traces}", ds["uid"], "panel %q", p.Title)
			default:
				t.Errorf("panel %q: target on data source %v", p.Title, ds)
			}
		}
	}

	qs, err := Queries()
	require.NoError(t, err)
	assert.Len(t, qs, exprs, "Queries() must return every Prometheus target of the JSON")
}

func TestResolve(t *testing.T) {
	q := Query{Expr: `rate(interconnect_io_bytes_total{host_name=~"$node"}[$__rate_interval])`}
	assert.Equal(t, `rate(interconnect_io_bytes_total{host_name=~".+"}[1m])`, q.Resolve("", "1m"))
	assert.Equal(t, `rate(interconnect_io_bytes_total{host_name=~"gpu-node\\.a"}[10s])`, q.Resolve("gpu-node.a", "10s"))
}

// TestOwnerVariables: $job and $pod list the owners of the selected nodes from the owner
// receiver's series, and each "Whose bytes" panel shows only the selected owners of its kind; All
// stands for any owner of that kind.
func TestOwnerVariables(t *testing.T) {
	b, err := JSON()
	require.NoError(t, err)
	var d struct {
		Templating struct {
			List []struct {
				Name     string `json:"name"`
				Query    any    `json:"query"`
				Multi    bool   `json:"multi"`
				AllValue string `json:"allValue"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	queries := map[string]any{}
	for _, v := range d.Templating.List {
		if v.Name == "job" || v.Name == "pod" {
			queries[v.Name] = v.Query
			assert.True(t, v.Multi, v.Name)
			assert.Equal(t, AllOwners, v.AllValue, v.Name)
		}
	}
	assert.Equal(t, map[string]any{
		"job": `label_values(interconnect_owner{owner_kind="job", host_name=~"$node"}, job_id)`,
		"pod": `label_values(interconnect_owner{owner_kind="pod", host_name=~"$node"}, k8s_pod_name)`,
	}, queries)

	qs, err := Queries()
	require.NoError(t, err)
	uses := map[string]string{}
	for _, q := range qs {
		for _, v := range []string{`job_id=~"$job"`, `k8s_pod_name=~"$pod"`} {
			if strings.Contains(q.Expr, v) {
				uses[q.Panel] = v
			}
		}
	}
	assert.Equal(t, map[string]string{"Bytes/s per job and component": `job_id=~"$job"`, "Bytes/s per pod and component": `k8s_pod_name=~"$pod"`}, uses)
	assert.Contains(t, Query{Expr: `x{job_id=~"$job", k8s_pod_name=~"$pod"}`}.Resolve("", "1m"), `job_id=~".+", k8s_pod_name=~".+"`)
}
