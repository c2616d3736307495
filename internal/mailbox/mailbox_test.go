package mailbox

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A Pool is what protoactor takes as a dispatcher.
var _ actor.Dispatcher = (*Pool)(nil)

// TestPoolRunsEveryRun: every scheduled run runs, and one that comes
// while the pool's goroutines are all busy does not wait for them.
func TestPoolRunsEveryRun(t *testing.T) {
	p := New()
	if got := p.Throughput(); got != Throughput {
		t.Fatalf("Throughput() = %d, want %d", got, Throughput)
	}

	busy, release := make(chan struct{}), make(chan struct{})
	ran := make(chan int, 4)
	p.Schedule(func() { close(busy); <-release; ran <- 1 })
	wait(t, busy, "the first run never began")
	p.Schedule(func() { ran <- 2 }) // the first goroutine is busy: a goroutine of its own
	if got := receive(t, ran); got != 2 {
		t.Fatalf("ran %d first, want 2", got)
	}
	close(release)
	if got := receive(t, ran); got != 1 {
		t.Fatalf("ran %d, want 1", got)
	}

	// Many runs at once, more than the pool parks: every one runs.
	var wg sync.WaitGroup
	const runs = 4 * MaxParked
	wg.Add(runs)
	for range runs {
		p.Schedule(wg.Done)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	wait(t, done, "not every run ran")
}

func wait(t *testing.T, ch <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal(why)
	}
}

func receive(t *testing.T, ch <-chan int) int {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing ran")
		return 0
	}
}
