package errtrack

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTracker(t *testing.T) {
	tr := newTracker()
	e1 := errors.New("read /sys/a: invalid argument")
	assert.True(t, tr.Fail("a", e1))
	assert.False(t, tr.Fail("a", e1), "the same failure again is not news")
	assert.True(t, tr.Fail("a", errors.New("open /sys/a: permission denied")), "a different failure is")
	assert.Equal(t, 1, tr.Failing())

	assert.True(t, tr.Recover("a"))
	assert.False(t, tr.Recover("a"))
	assert.True(t, tr.Fail("a", e1), "failing again after a recovery is news")

	tr.Fail("/sys/class/infiniband/mlx5_1/x", e1)
	tr.Forget(func(k string) bool { return !strings.Contains(k, "mlx5_1") })
	assert.Equal(t, 1, tr.Failing())
}
