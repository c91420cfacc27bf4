package devicefilter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter Filter
		in     []string
		out    []string
	}{
		{"empty keeps all", Filter{}, []string{"mlx5_0", "bnxt_re0"}, nil},
		{"strict include", Filter{Include: Match{Devices: []string{"mlx5_0"}, MatchType: Strict}},
			[]string{"mlx5_0"}, []string{"mlx5_1", "mlx5_00"}},
		{"glob include, exclude wins", Filter{
			Include: Match{Devices: []string{"mlx5_*"}, MatchType: Glob},
			Exclude: Match{Devices: []string{"mlx5_1"}, MatchType: Strict}},
			[]string{"mlx5_0", "mlx5_2"}, []string{"mlx5_1", "irdma0"}},
		{"regexp is anchored", Filter{Include: Match{Devices: []string{"mlx5_[0-3]"}, MatchType: Regexp}},
			[]string{"mlx5_0", "mlx5_3"}, []string{"mlx5_10", "xmlx5_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.filter.Validate())
			for _, n := range tc.in {
				assert.True(t, tc.filter.Selects(n), n)
			}
			for _, n := range tc.out {
				assert.False(t, tc.filter.Selects(n), n)
			}
		})
	}
}

func TestSelectsPortName(t *testing.T) {
	f := Filter{Exclude: Match{Devices: []string{"mlx5_0/2"}, MatchType: Strict}}
	require.NoError(t, f.Validate())
	assert.True(t, f.Selects("mlx5_0", "mlx5_0/1"))
	assert.False(t, f.Selects("mlx5_0", "mlx5_0/2"))
}

func TestRegexpWithoutValidate(t *testing.T) {
	f := Filter{Include: Match{Devices: []string{"gpu[01]"}, MatchType: Regexp}}
	assert.True(t, f.Selects("gpu1"))
	assert.False(t, f.Selects("gpu2"))
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		filter Filter
		want   string
	}{
		{Filter{Include: Match{Devices: []string{"a"}}}, `include.match_type: must be one of strict, regexp, glob, got ""`},
		{Filter{Exclude: Match{Devices: []string{"["}, MatchType: Glob}}, `exclude.devices: bad shell pattern, got "["`},
		{Filter{Include: Match{Devices: []string{"("}, MatchType: Regexp}}, `include.devices: bad regular expression, got "("`},
	} {
		err := tc.filter.Validate()
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	assert.NoError(t, (&Filter{Include: Match{MatchType: "nonsense"}}).Validate(), "no devices: nothing to match")
}

func TestDefaultIsGlob(t *testing.T) {
	f := Default()
	f.Include.Devices = []string{"mlx5_*"}
	require.NoError(t, f.Validate())
	assert.True(t, f.Selects("mlx5_3"))
	assert.False(t, f.Selects("bnxt_re0"))
}
