package natorder

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompare(t *testing.T) {
	names := []string{"mlx5_10", "mlx5_2", "mlx5_bond_0", "mlx5_1", "irdma0", "mlx5_11", "mlx5_02"}
	slices.SortFunc(names, Compare)
	assert.Equal(t, []string{"irdma0", "mlx5_1", "mlx5_02", "mlx5_2", "mlx5_10", "mlx5_11", "mlx5_bond_0"}, names)
}
