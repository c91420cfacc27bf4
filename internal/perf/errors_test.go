package perf

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHint(t *testing.T) {
	assert.Contains(t, Hint(syscall.EACCES), "perf_event_paranoid")
	assert.Contains(t, Hint(syscall.EPERM), "CAP_SYS_ADMIN")
	assert.Contains(t, Hint(syscall.ENODEV), "gone")
	assert.Empty(t, Hint(errors.New("other")))
}
