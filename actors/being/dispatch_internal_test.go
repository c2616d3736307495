package being

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarmPoolRunsEveryRun: every scheduled run runs, and one that comes
// while the pool's goroutines are all busy does not wait for them.
func TestWarmPoolRunsEveryRun(t *testing.T) {
	p := &warmPool{runs: make(chan func())}
	assert.Equal(t, mailboxThroughput, p.Throughput())

	busy, release := make(chan struct{}), make(chan struct{})
	ran := make(chan int, 4)
	p.Schedule(func() { close(busy); <-release; ran <- 1 })
	select {
	case <-busy:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the first run never began")
	}
	p.Schedule(func() { ran <- 2 }) // the first goroutine is busy: a goroutine of its own
	require.Equal(t, 2, receive(t, ran))
	close(release)
	require.Equal(t, 1, receive(t, ran))

	// Many runs at once, more than the pool parks: every one runs.
	var wg sync.WaitGroup
	const runs = 4 * maxParked
	wg.Add(runs)
	for range runs {
		p.Schedule(wg.Done)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "not every run ran")
	}
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
