package being_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// gate holds the k-th durable write of one file until release is
// closed: entered is closed when that write begins. A gate never holds
// a write past waitLimit, so a failing test still ends.
type gate struct {
	file    string
	k       int
	entered chan struct{}
	release chan struct{}

	mu     sync.Mutex
	seen   int
	opened sync.Once
}

func newGate(t *testing.T, file string, k int) *gate {
	g := &gate{file: file, k: k, entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

// open lets the held write through.
func (g *gate) open() { g.opened.Do(func() { close(g.release) }) }

func (g *gate) hook(file string) error {
	if file != g.file {
		return nil
	}
	g.mu.Lock()
	g.seen++
	n := g.seen
	g.mu.Unlock()
	if n == g.k {
		close(g.entered)
		select {
		case <-g.release:
		case <-time.After(waitLimit):
		}
	}
	return nil
}

func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitLimit):
		t.Fatalf("write %d of %s never began", g.k, g.file)
	}
}

// requestSignal makes srv answer every completion with a plain reply
// and returns a channel closed when the n-th request arrives.
func requestSignal(srv *bramatest.Server, n int) <-chan struct{} {
	arrived := make(chan struct{})
	var (
		mu   sync.Mutex
		seen int
	)
	srv.SetHandler(func(*bramatest.Request) bramatest.Reply {
		mu.Lock()
		seen++
		if seen == n {
			close(arrived)
		}
		mu.Unlock()
		return bramatest.TextReply("done", bramatest.Usage(100, 10))
	})
	return arrived
}

// TestCycleEndCheckpointInBackground: in run the next cycle does not wait
// for the cycle-end state.json (docs/state.md#the-journal). With that
// write held, the being journals the next cycle's framing and asks the
// model again; state.json still holds the boot checkpoint meanwhile.
// Once the write lands and the being stops, state.json includes every
// event and the journal balances.
func TestCycleEndCheckpointInBackground(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	second := requestSignal(srv, 2)
	held := newGate(t, state.StateFile, 2) // 1 is the boot checkpoint
	opts := options(t, being.Run)
	opts.CycleInterval = 0
	opts.MaxCycles = 2
	opts.StorageFault = held.hook
	h := start(t, srv, opts)

	held.wait(t)
	select {
	case <-second:
	case <-time.After(waitLimit):
		t.Fatal("the next cycle waited for the cycle-end state.json")
	}
	cycles := 0
	for _, e := range h.journal() {
		if e.Type == state.EventCycleStarted {
			cycles++
		}
	}
	assert.Equal(t, 2, cycles, "the second cycle's framing is durable while the checkpoint is written")
	boot := h.state()
	require.NotNil(t, boot.JournalSeq)
	assert.Equal(t, uint64(1), *boot.JournalSeq, "state.json is still the boot checkpoint")

	held.open()
	h.shutdown()
	st := h.state()
	events := h.journal()
	require.NotNil(t, st.JournalSeq)
	assert.Equal(t, events[len(events)-1].Seq, *st.JournalSeq, "the final checkpoint includes every event")
	assert.Equal(t, uint64(2), st.Cycle)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	for i, e := range events {
		require.Equal(t, uint64(i+1), e.Seq, "seq has no gaps")
	}
}

// TestFailedBackgroundCheckpointIsHeld: a cycle-end state.json that
// fails in the background is held like any failed write. The step on its
// way meanwhile lands; the being shows storage_unavailable, writes the
// checkpoint again before its next step, waits 1 s, then 2 s (the
// injected clock shows the waits asked for) and asks the model nothing
// meanwhile; when it lands the being carries on, the
// failures are journaled as one warning, and a resume finds it whole.
func TestFailedBackgroundCheckpointIsHeld(t *testing.T) {
	t.Parallel()
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EFBIG, syscall.EROFS, syscall.EACCES} {
		t.Run(errno.Error(), func(t *testing.T) {
			t.Parallel()
			srv := newBrama(t)
			requestSignal(srv, 0)
			fault := &failing{file: state.StateFile, k: 2, times: 3, errno: errno, attempts: make(chan int, 8)}
			clock := testkit.NewStepClock()
			opts := options(t, being.Run)
			opts.CycleInterval = 0
			opts.MaxCycles = 2
			// The background attempt fails while the next cycle's framing
			// (the journal's fourth write) is on its way: that step lands,
			// and the failure stays open until the checkpoint does.
			framing := make(chan struct{})
			var journalWrites, stateWrites atomic.Int32
			opts.StorageFault = func(file string) error {
				switch {
				case file == state.JournalFile && journalWrites.Add(1) == 4:
					close(framing)
				case file == state.StateFile && stateWrites.Add(1) == 2:
					select {
					case <-framing:
					case <-time.After(waitLimit):
					}
				}
				return fault.hook(file)
			}
			opts.Clock = clock
			h := start(t, srv, opts)

			attempt := func(i int) {
				t.Helper()
				select {
				case n := <-fault.attempts:
					require.Equal(t, i, n)
				case <-time.After(waitLimit):
					t.Fatalf("attempt %d of the cycle-end checkpoint never came", i)
				}
			}
			attempt(1) // in the background
			attempt(2) // held, before the next step
			var completions int
			for i, wait := range []time.Duration{time.Second, 2 * time.Second} {
				timer := clock.Next(t, waitLimit)
				assert.Equal(t, wait, timer.After, "retry %d waits", i+1)
				if i == 0 {
					completions = len(srv.Completions())
					assert.Equal(t, being.StatusStorageUnavailable, h.rootStatus())
				}
				assert.Equal(t, completions, len(srv.Completions()), "no completion while the checkpoint is held")
				timer.Fire()
				if i == 0 {
					attempt(3)
				}
			}
			r := h.reportFor(2)
			require.NoError(t, r.Err)
			h.system.Root.Send(h.family, messages.ShutdownFamily{})
			h.stopped()

			st := h.state()
			events := h.journal()
			require.NoError(t, testkit.CheckInvariant(st.Budget, events))
			assert.Equal(t, state.StatusStopped, st.Status)
			assert.Equal(t, events[len(events)-1].Seq, *st.JournalSeq)
			var storage []state.Event
			for _, e := range events {
				if e.Type == state.EventWarning && strings.HasPrefix(e.Message, "storage unavailable: ") {
					storage = append(storage, e)
				}
			}
			require.Len(t, storage, 1, "the failures are journaled once")
			assert.Equal(t, 3, storage[0].Repeats, "one warning stands for the three failed attempts")
			assert.Contains(t, storage[0].Message, errno.Error())

			opts.StorageFault, opts.Clock, opts.MaxCycles = nil, nil, 3
			again := resume(t, srv, opts)
			r = again.reportFor(3)
			require.NoError(t, r.Err)
			again.shutdown()
			st = again.state()
			events = again.journal()
			require.NoError(t, testkit.CheckInvariant(st.Budget, events))
			for i, e := range events {
				require.Equal(t, uint64(i+1), e.Seq, "seq has no gaps")
			}
		})
	}
}

// TestStopWaitsForBackgroundCheckpoint: a stop that does not wait, while
// storage fails the next cycle's framing and the cycle-end state.json is
// still being written, gives up the held step but ends the being only
// once that state.json has landed: nothing of the being writes after it
// stopped.
func TestStopWaitsForBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	requestSignal(srv, 0)
	held := newGate(t, state.StateFile, 2)
	// The journal's writes: boot, framing, completion, then the second
	// cycle's framing, which fails.
	framing := &failing{file: state.JournalFile, k: 4, times: 1 << 20, errno: syscall.ENOSPC, attempts: make(chan int, 1<<10)}
	opts := options(t, being.Run)
	opts.CycleInterval = 0
	opts.StorageFault = func(file string) error {
		if err := held.hook(file); err != nil {
			return err
		}
		return framing.hook(file)
	}
	opts.Clock = testkit.NewStepClock()
	h := start(t, srv, opts)

	held.wait(t)
	select {
	case <-framing.attempts:
	case <-time.After(waitLimit):
		t.Fatal("the second cycle's framing was never written")
	}
	h.system.Root.Send(h.family, messages.ShutdownFamily{Now: true})
	held.open()
	h.stopped()
	st := h.state()
	events := h.journal()
	require.NotNil(t, st.JournalSeq)
	assert.Equal(t, events[len(events)-1].Seq, *st.JournalSeq, "the cycle-end checkpoint landed before the being ended")
	assert.Equal(t, uint64(1), st.Cycle)
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
}
