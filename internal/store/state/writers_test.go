package state

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWritersBacklogged: a pool is backlogged exactly while a job waits
// for a goroutine; a nil pool never is.
func TestWritersBacklogged(t *testing.T) {
	var none *Writers
	assert.False(t, none.Backlogged())

	w := NewWriters(1)
	defer w.Close()
	assert.False(t, w.Backlogged(), "an idle pool")
	busy, release, ran := make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.Do(func() { close(busy); <-release })
	wait(t, busy)
	assert.False(t, w.Backlogged(), "one job on the one goroutine, none waiting")
	w.Do(func() { close(ran) })
	assert.True(t, w.Backlogged(), "a second job waits")
	close(release)
	wait(t, ran)
	assert.False(t, w.Backlogged(), "the waiting job was taken")
}

func wait(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the job never ran")
	}
}
