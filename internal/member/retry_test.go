package member

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRetries(t *testing.T) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	r := NewRetries(3*time.Second, 20*time.Second)
	assert.True(t, r.Ready("ada", at), "a being that never failed")

	waits := []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second, 20 * time.Second, 20 * time.Second}
	for i, want := range waits {
		assert.Equal(t, want, r.Failed("ada", at), "failure %d in a row", i+1)
		assert.False(t, r.Ready("ada", at.Add(want-time.Millisecond)), "failure %d: held back", i+1)
		assert.True(t, r.Ready("ada", at.Add(want)), "failure %d: ready once its wait is over", i+1)
		at = at.Add(want)
	}
	assert.True(t, r.Ready("bo", at), "another being is not held back")

	r.Stopped("ada")
	assert.True(t, r.Ready("ada", at))
	assert.Equal(t, 3*time.Second, r.Failed("ada", at), "a stop without failure starts the waits again")
}
