package las

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerRunsEveryScheduledRun: runs are handed to the worker in
// order; a full slot and a stopped worker still run what they are given.
func TestWorkerRunsEveryScheduledRun(t *testing.T) {
	w := newWorker()
	ran := make(chan int, 8)
	busy, release := make(chan struct{}), make(chan struct{})
	w.Schedule(func() { close(busy); <-release; ran <- 1 })
	<-busy                          // the worker is in the first run
	w.Schedule(func() { ran <- 2 }) // waits in the slot
	w.Schedule(func() { ran <- 3 }) // slot full: a goroutine of its own
	assert.Equal(t, 3, receive(t, ran))
	close(release)
	assert.Equal(t, 1, receive(t, ran))
	assert.Equal(t, 2, receive(t, ran))

	w.stop()
	w.stop() // twice is harmless
	w.Schedule(func() { ran <- 4 })
	assert.Equal(t, 4, receive(t, ran))
	assert.Equal(t, mailboxThroughput, w.Throughput())
}

func receive(t *testing.T, ch <-chan int) int {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		require.FailNow(t, "nothing ran")
		return 0
	}
}
