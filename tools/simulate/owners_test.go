package simulate

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// TestSlurmMappingFollowsTheTwoJobNode: the mapping directory written for a sample holds one file
// per GPU index in dcgm-exporter's format (the job id a line), GPUs 0-3 job 4711's and GPUs 4-7
// 4712's before the switch and 4713's from the switch's sample on, and no temporary file is left
// for the resolver to read. (internal/owner's TestSlurmMappingDirectory reads this format.)
func TestSlurmMappingFollowsTheTwoJobNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "jobs")
	const switchAt = 20
	for _, c := range []struct {
		sample int
		second string
	}{{switchAt - 1, scenario.JobB}, {switchAt, scenario.JobC}} {
		require.NoError(t, WriteSlurmMapping(dir, c.sample, switchAt))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		got := map[string]string{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			got[e.Name()] = string(b)
		}
		want := map[string]string{}
		for g := range 2 * scenario.JobGPUs {
			job := scenario.JobA
			if g >= scenario.JobGPUs {
				job = c.second
			}
			want[strconv.Itoa(g)] = job + "\n"
		}
		assert.Equal(t, want, got, "sample %d", c.sample)
	}
}
