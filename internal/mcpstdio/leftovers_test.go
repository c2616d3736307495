package mcpstdio

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReapLeftoversSharesSweeps: calls made while a sweep runs wait for
// one sweep that begins after them, which they share; none returns on
// the sweep that was already running when it was made.
func TestReapLeftoversSharesSweeps(t *testing.T) {
	const callers = 40
	running := make(chan struct{})
	release := make(chan struct{})
	waiting := make(chan struct{}, callers)
	var mu sync.Mutex
	var swept []int // the sweeps, by the number of calls made when each began
	made := 0
	t.Cleanup(func() {
		sweeps.Lock()
		sweeps.sweep, sweeps.waiting = sweepLeftovers, nil
		sweeps.Unlock()
	})
	sweeps.Lock()
	sweeps.sweep = func() int {
		mu.Lock()
		swept = append(swept, made)
		first := len(swept) == 1
		mu.Unlock()
		if first {
			close(running)
			<-release
		}
		return 0
	}
	sweeps.waiting = func() { waiting <- struct{}{} }
	sweeps.Unlock()

	returned := make(chan int, callers+1)
	call := func(n int) {
		mu.Lock()
		made++
		mu.Unlock()
		reapLeftovers()
		returned <- n
	}
	deadline := time.After(10 * time.Second)
	go call(0)
	select {
	case <-running:
	case <-deadline:
		t.Fatal("the first call did not sweep")
	}
	for n := 1; n <= callers; n++ {
		go call(n)
	}
	for range callers {
		select {
		case <-waiting:
		case <-deadline:
			t.Fatal("the calls made during a sweep did not wait for the next")
		}
	}
	select {
	case n := <-returned:
		t.Fatalf("call %d returned while the first sweep ran", n)
	default:
	}
	close(release)
	for range callers + 1 {
		select {
		case <-returned:
		case <-deadline:
			t.Fatal("a call did not return")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, callers + 1}, swept, "the running sweep, then one for all %d calls made during it", callers)
}
