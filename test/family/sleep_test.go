package family_test

import (
	"fmt"

	"github.com/wisent/singularity/messages"
	"testing"
	"time"

	"github.com/wisent/singularity/test/testkit"
)

// sleepingBeings is the size of BenchmarkSleepingFamily's family.
const sleepingBeings = 1000

// BenchmarkSleepingFamily measures what a family costs asleep
// (docs/family.md#sleep): 1,000 beings, each of which answers its first
// completion with singularity_self_sleep for an hour, on one injected
// clock (testkit.ManualClock). Once every being's sleep timer is set
// the clock is advanced by 60 s: requests-in-60s is how many completions
// the family asked for over that minute of its clock, and must be 0.
// heap-B/being is then taken as BenchmarkFamilyScale takes it (HeapInuse
// after a GC less before any being was spawned, over K), beside the
// same family awake after one cycle (awake-heap-B/being: the beings
// cycle on, on the wall clock, without the family tools). The minute is
// advanced in b.N steps: an op is an advance of the clock, with its
// timers.
func BenchmarkSleepingFamily(b *testing.B) {
	awake := startScale(b, scaleConfig{beings: sleepingBeings, life: 1, window: scaleWindow, dir: scaleDir(b)})
	awakeHeap := awake.measure("").heap
	awake.stop(b)

	clock := testkit.NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	sw := startScale(b, scaleConfig{beings: sleepingBeings, life: 1, window: scaleWindow, dir: scaleDir(b), sleep: true, clock: clock})
	defer sw.stop(b)
	clock.WaitPending(b, sleepingBeings, sleepFor-time.Minute, 10*time.Minute)
	before := sw.brama.answered()
	step := time.Minute / time.Duration(b.N)
	b.ResetTimer()
	for range b.N {
		clock.Advance(step)
	}
	b.StopTimer()
	clock.Advance(time.Minute - step*time.Duration(b.N))
	// Whatever a minute of the clock set off has reached the gateway
	// once every being answers again: a describe goes behind it in each
	// mailbox.
	sw.barrier(b)
	asked := sw.brama.answered() - before
	if asked != 0 {
		b.Errorf("the sleeping family asked for %d completions over a minute of its clock", asked)
	}
	if pending := clock.Pending(sleepFor - time.Minute); pending != sleepingBeings {
		b.Errorf("%d of %d beings still sleep", pending, sleepingBeings)
	}
	b.ReportMetric(float64(asked), "requests-in-60s")
	b.ReportMetric(float64(sw.measure("").heap)/sleepingBeings, "heap-B/being")
	b.ReportMetric(float64(awakeHeap)/sleepingBeings, "awake-heap-B/being")
}

// answered is how many rounds the Brama has answered.
func (z *zeroBrama) answered() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.rounds
}

// barrier returns once every being has handled what its mailbox held
// before it: each answers a describe request after that.
func (sw *scaleWorld) barrier(tb testing.TB) {
	tb.Helper()
	for i := range sw.k {
		pid := sw.system.NewLocalPID(fmt.Sprintf("family/being-%d", i))
		if _, err := sw.system.Root.RequestFuture(pid, messages.DescribeRequest{}, time.Minute).Result(); err != nil {
			tb.Fatalf("being %d: %v", i, err)
		}
	}
}
