package dashboard

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
	assert.Equal(t, map[string]string{"datasource": "datasource", "traces": "datasource", "node": "query"}, vars)

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
