package being_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// failing is a storage fault: it fails the k-th write of one file with
// errno, times times in a row, then lets it through ("space returns").
// It reports each failed attempt and counts the writes of any file
// attempted while the failing write is held.
type failing struct {
	file  string
	k     int
	times int
	errno error

	mu       sync.Mutex
	seen     int // writes of file that went through
	failed   int
	during   int // other writes attempted while held
	attempts chan int
}

func (f *failing) hook(file string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.failed > 0 && f.failed <= f.times && f.seen < f.k
	if file != f.file {
		if held {
			f.during++
		}
		return nil
	}
	if f.seen+1 == f.k && f.failed < f.times {
		f.failed++
		f.attempts <- f.failed
		return f.errno
	}
	if held && f.seen+1 != f.k {
		f.during++
	}
	f.seen++
	return nil
}

func (f *failing) heldWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.during
}

// scriptedCycle is one cycle of two rounds: two built-in calls, then a
// reply. Its journal steps are: started (boot), the framing, the first
// completion, each call, the second completion, stopped; its checkpoints:
// boot, cycle end, shutdown.
func scriptedCycle(srv *bramatest.Server) {
	srv.Enqueue(
		bramatest.ToolCallsReply(bramatest.Usage(1000, 100),
			bramatest.Call("a", "singularity_memory_remember", `{"kind":"lead","text":"bakery"}`),
			bramatest.Call("b", "singularity_memory_recall", `{"query":"bakery"}`)),
		bramatest.TextReply("done", bramatest.Usage(1200, 20)),
	)
}

// TestStorageFaultsAtEveryStep fails each durable write of a cycle in
// turn, with each storage error, three times before it goes through.
// The being must hold the step (no other write, no tool, no completion
// while it waits), retry after 1 s, 2 s, 4 s (the injected clock shows
// the waits asked for), show storage_unavailable, then carry on where it
// was; afterwards no request ever carried an unanswered tool call, the
// invariant is exact, and a resume finds the being whole.
func TestStorageFaultsAtEveryStep(t *testing.T) {
	errnos := []syscall.Errno{syscall.ENOSPC, syscall.EIO, syscall.EFBIG, syscall.EROFS, syscall.EACCES}
	type target struct {
		file  string
		k     int
		step  string
		final bool // written after the cycle report (the shutdown)
	}
	targets := []target{
		{state.JournalFile, 1, "boot", false},
		{state.JournalFile, 2, "framing", false},
		{state.JournalFile, 3, "completion", false},
		{state.JournalFile, 4, "first tool", false},
		{state.JournalFile, 5, "second tool", false},
		{state.JournalFile, 6, "last completion", false},
		{state.JournalFile, 7, "shutdown", true},
		{state.StateFile, 1, "boot checkpoint", false},
		{state.StateFile, 2, "cycle-end checkpoint", false},
		{state.StateFile, 3, "final checkpoint", true},
	}
	for _, errno := range errnos {
		for _, tg := range targets {
			t.Run(fmt.Sprintf("%s/%s", errno, tg.step), func(t *testing.T) {
				t.Parallel()
				srv := newBrama(t)
				scriptedCycle(srv)
				fault := &failing{file: tg.file, k: tg.k, times: 3, errno: errno, attempts: make(chan int, 8)}
				clock := testkit.NewStepClock()
				opts := options(t, being.Once)
				opts.StorageFault = fault.hook
				opts.Clock = clock
				h := start(t, srv, opts)

				drive := func() {
					t.Helper()
					var completions int
					for i := 1; i <= fault.times; i++ {
						select {
						case n := <-fault.attempts:
							require.Equal(t, i, n)
						case <-time.After(waitLimit):
							t.Fatalf("attempt %d of the held write never came", i)
						}
						timer := clock.Next(t, waitLimit)
						assert.Equal(t, time.Second<<(i-1), timer.After, "retry %d waits", i)
						if i == 1 {
							completions = len(srv.Completions())
							assert.Equal(t, being.StatusStorageUnavailable, h.rootStatus())
						}
						assert.Equal(t, completions, len(srv.Completions()), "no completion while the step is held")
						assert.Zero(t, fault.heldWrites(), "no other write while the step is held")
						timer.Fire()
					}
				}
				if !tg.final {
					drive()
				}
				r := h.report()
				require.NoError(t, r.Err)
				assert.Equal(t, being.ReportCompleted, r.Status)
				assert.Equal(t, []string{"singularity_memory_remember", "singularity_memory_recall"}, r.Actions)
				h.system.Root.Send(h.family, messages.ShutdownFamily{})
				if tg.final {
					drive()
				}
				h.stopped()
				assert.Empty(t, srv.UnansweredToolCalls(), "every tool call in every request is answered")

				st := h.state()
				events, err := state.ReadAll(opts.StateDir)
				require.NoError(t, err)
				require.NoError(t, testkit.CheckInvariant(st.Budget, events))
				assert.Equal(t, state.StatusStopped, st.Status)
				assert.Len(t, st.Mind.Memories, 1, "the memory of the held step exists once")
				warned := false
				for _, e := range events {
					if e.Type == state.EventWarning && e.Repeats == 3 {
						warned = true
						assert.Contains(t, e.Message, "storage unavailable: ")
						assert.Contains(t, e.Message, errno.Error())
					}
				}
				assert.True(t, warned, "one warning stands for the three failed attempts (after a final save too)")

				// A resume finds the being whole and lives on.
				srv.Enqueue(bramatest.TextReply("again", bramatest.Usage(10, 1)))
				opts.StorageFault, opts.Clock = nil, nil
				again := resume(t, srv, opts)
				r = again.report()
				require.NoError(t, r.Err)
				assert.Equal(t, uint64(2), r.Cycle)
				again.shutdown()
				assert.Empty(t, srv.UnansweredToolCalls(), "every tool call in every request is answered")
				st = again.state()
				events, err = state.ReadAll(opts.StateDir)
				require.NoError(t, err)
				require.NoError(t, testkit.CheckInvariant(st.Budget, events))
				for i, e := range events {
					require.Equal(t, uint64(i+1), e.Seq, "seq has no gaps")
				}
			})
		}
	}
}

// rootStatus is the root being's debug status.
func (h *harness) rootStatus() string {
	h.t.Helper()
	root := h.system.NewLocalPID("family/" + family.RootName)
	res, err := h.system.Root.RequestFuture(root, messages.DescribeRequest{}, waitLimit).Result()
	require.NoError(h.t, err)
	d, ok := res.(messages.Description)
	require.True(h.t, ok, "describe answered %T", res)
	return d.Status
}

// TestFailingCyclesBackOff: a gateway that answers 500 thirty times in
// run. Each failed cycle waits twice as long as the one before, from
// 1 s up to 30 s (the gateway's cap); the framing message the model never answered is
// replaced by the next one, so no request ever carries more than one;
// the cycle counter still advances and a good answer resets the wait.
func TestFailingCyclesBackOff(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	const failures = 30
	for range failures {
		srv.Enqueue(bramatest.ErrorReply(500, "upstream down"))
	}
	srv.Enqueue(bramatest.TextReply("back", bramatest.Usage(10, 1)))
	clock := testkit.NewStepClock()
	opts := options(t, being.Run)
	opts.Clock = clock
	opts.CycleInterval = 0
	h := start(t, srv, opts)

	want := time.Second
	for i := 1; i <= failures; i++ {
		r := h.reportFor(uint64(i))
		require.Error(t, r.Err, "cycle %d", i)
		timer := clock.Next(t, waitLimit)
		assert.Equal(t, want, timer.After, "wait after %d failed cycles", i)
		want = min(2*want, 30*time.Second)
		timer.Fire()
	}
	r := h.reportFor(failures + 1)
	require.NoError(t, r.Err)
	// The interval is 0, so the next cycle starts at once; the script is
	// done, so it fails: its wait starts again from 1 s.
	r = h.reportFor(failures + 2)
	require.Error(t, r.Err)
	timer := clock.Next(t, waitLimit)
	assert.Equal(t, time.Second, timer.After, "a completed cycle reset the wait")
	h.shutdown()

	for i, req := range srv.Completions() {
		assert.LessOrEqual(t, unansweredFramings(req.Completion.Messages), 1, "request %d", i)
	}
	st := h.state()
	assert.Equal(t, uint64(failures+2), st.Cycle)
	assert.LessOrEqual(t, unansweredFramings(st.Conversation), 1)
	events := h.journal()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	warnings := 0
	for _, e := range events {
		if e.Type == state.EventWarning {
			warnings++
		}
	}
	assert.Equal(t, failures+1, warnings, "one warning per failed cycle (one per backoff step)")
}

// unansweredFramings counts framing messages no assistant message
// follows before the next framing (the newest one counts: the model is
// about to answer it).
func unansweredFramings(msgs []chat.Message) int {
	n := 0
	for j, m := range msgs {
		if !state.IsFraming(m) {
			continue
		}
		answered := false
		for _, r := range msgs[j+1:] {
			if state.IsFraming(r) {
				break
			}
			if r.Role == chat.RoleAssistant {
				answered = true
				break
			}
		}
		if !answered {
			n++
		}
	}
	return n
}

// counting counts the durable writes of each file.
type counting struct {
	mu     sync.Mutex
	writes map[string]int
}

func (c *counting) hook(file string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes == nil {
		c.writes = map[string]int{}
	}
	c.writes[file]++
	return nil
}

// TestDurableWritesPerRound counts every durable write of a six-round
// once with ten tool calls (the one measured at 69 fsyncs before the
// journal became the write-ahead log): one journal append for the boot,
// the framing, each completion, each tool and the shutdown, and three
// checkpoints (boot, cycle end, shutdown) — per round 1 + tools, plus
// 0.5 checkpoints — and, once in a being's life, the last-words file
// made ready.
func TestDurableWritesPerRound(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	const rounds, perRound = 6, 2
	for i := range rounds - 1 {
		srv.Enqueue(bramatest.ToolCallsReply(bramatest.Usage(100, 10),
			bramatest.Call(fmt.Sprintf("a%d", i), "singularity_memory_remember", `{"kind":"k","text":"t"}`),
			bramatest.Call(fmt.Sprintf("b%d", i), "singularity_memory_recall", `{"query":"t"}`)))
	}
	srv.Enqueue(bramatest.TextReply("done", bramatest.Usage(100, 10)))
	writes := &counting{}
	opts := options(t, being.Once)
	opts.StorageFault = writes.hook
	h := start(t, srv, opts)
	r := h.report()
	require.NoError(t, r.Err)
	require.Len(t, r.Actions, (rounds-1)*perRound)
	h.shutdown()

	tools := (rounds - 1) * perRound
	assert.Equal(t, map[string]int{
		state.JournalFile:   1 + 1 + rounds + tools + 1, // boot, framing, completions, tools, shutdown
		state.StateFile:     3,                          // boot, cycle end, shutdown
		state.LastWordsFile: 1,                          // made with the boot checkpoint, empty
	}, writes.writes)
	events := h.journal()
	require.NoError(t, testkit.CheckInvariant(h.state().Budget, events))
}

// TestJournalSegments: with a tiny segment size every checkpoint starts
// a new segment; a resume reads only what lies past its checkpoint, and
// the whole life, read across every segment, is numbered without gaps
// and balances.
func TestJournalSegments(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	scriptedCycle(srv)
	opts := options(t, being.Once)
	opts.SegmentBytes = 1
	h := start(t, srv, opts)
	require.NoError(t, h.report().Err)
	h.shutdown()

	srv.Enqueue(bramatest.TextReply("again", bramatest.Usage(10, 1)))
	again := resume(t, srv, opts)
	r := again.report()
	require.NoError(t, r.Err)
	assert.Equal(t, uint64(2), r.Cycle)
	again.shutdown()

	segs, err := state.Segments(opts.StateDir)
	require.NoError(t, err)
	assert.Greater(t, len(segs), 3, "each checkpoint began a segment")
	events, err := state.ReadAll(opts.StateDir)
	require.NoError(t, err)
	for i, e := range events {
		require.Equal(t, uint64(i+1), e.Seq, "seq runs on across segments")
	}
	st := again.state()
	require.NoError(t, testkit.CheckInvariant(st.Budget, events))
	assert.Equal(t, st.Seq(), events[len(events)-1].Seq, "the last checkpoint includes every event")
	assert.Len(t, st.Mind.Memories, 1)
}

// stopWhileHeld runs a scripted once whose k-th journal append storage
// refuses for good (its retries never come), asks the family to stop,
// as a first Ctrl-C does (a grace of 100 ms), once that append was
// attempted, and returns what the family ended with.
func stopWhileHeld(t *testing.T, k int) (*bramatest.Server, being.Options, *harness, messages.FamilyStopped) {
	t.Helper()
	srv := newBrama(t)
	scriptedCycle(srv)
	refuse := &failing{file: state.JournalFile, k: k, times: 1 << 20, errno: syscall.ENOSPC, attempts: make(chan int, 8)}
	opts := options(t, being.Once)
	opts.StorageFault = refuse.hook
	opts.Clock = testkit.NewStepClock() // the retries never come
	opts.ShutdownGrace = 100 * time.Millisecond
	h := start(t, srv, opts)
	select {
	case <-refuse.attempts:
	case <-time.After(waitLimit):
		t.Fatalf("journal append %d was never attempted", k)
	}
	h.system.Root.Send(h.family, messages.ShutdownFamily{})
	return srv, opts, h, h.stopped()
}

// TestStopWhileTheBootStepIsHeld: storage refuses the boot step for good
// and a stop that waits (the first Ctrl-C) is asked. The stop ends the
// being within the shutdown grace, as it does mid-cycle: the held step is
// given up, nothing more is written, no completion is asked, and the
// family stops failed with the storage error (once exits non-zero).
func TestStopWhileTheBootStepIsHeld(t *testing.T) {
	srv, opts, h, stopped := stopWhileHeld(t, 1)
	require.Error(t, stopped.Err, "the being ends failed")
	assert.Equal(t, fault.ClassState, fault.ClassOf(stopped.Err))
	assert.Contains(t, stopped.Err.Error(), "storage unavailable: ")
	assert.Empty(t, srv.Completions(), "no completion was asked")
	events, err := state.ReadAll(opts.StateDir)
	require.NoError(t, err)
	assert.Empty(t, events, "nothing of the boot was written")
	assert.Equal(t, state.StatusStarting, h.state().Status, "state.json is as the boot found it")
	words, err := state.ReadLastWords(opts.StateDir)
	require.NoError(t, err)
	require.NotNil(t, words, "the failed end is the being's last words")
	assert.Equal(t, state.StatusFailed, words.Status)
	assert.Equal(t, stopped.Err.Error(), words.Reason)
}

// TestStorageGivenUpMidLifeLeavesLastWords: storage refuses a step in
// the middle of a cycle for good, and a stop that waits gives it up once
// the grace has passed. The being ends failed with the storage error,
// which it cannot journal: it writes it as its last words instead, in
// place, with the seq its journal ended at. The next boot, storage
// back, journals them as the stopped event they stand for, just before
// its started, and empties the file.
func TestStorageGivenUpMidLifeLeavesLastWords(t *testing.T) {
	srv, opts, h, stopped := stopWhileHeld(t, 3) // the first completion's step
	require.Error(t, stopped.Err, "the being ends failed")
	assert.Equal(t, state.StatusFailed, stopped.Status)
	assert.Equal(t, fault.ClassState, fault.ClassOf(stopped.Err))
	assert.Regexp(t, `^state: step given up at shutdown: storage unavailable: .*`+syscall.ENOSPC.Error(), stopped.Err.Error())

	events := h.journal()
	require.NotEmpty(t, events)
	assert.NotEqual(t, state.EventStopped, events[len(events)-1].Type, "the end is not journaled")
	words, err := state.ReadLastWords(opts.StateDir)
	require.NoError(t, err)
	require.NotNil(t, words, "the end is the being's last words")
	assert.Equal(t, state.StatusFailed, words.Status)
	assert.Equal(t, stopped.Err.Error(), words.Reason)
	assert.Equal(t, events[len(events)-1].Seq, words.Seq, "the words follow the journal's last event")
	info, err := os.Stat(filepath.Join(opts.StateDir, state.LastWordsFile))
	require.NoError(t, err)
	assert.EqualValues(t, state.LastWordsSize, info.Size(), "written in place, at its size")

	// Storage is back: the next boot journals the words, then empties them.
	srv.Enqueue(bramatest.TextReply("again", bramatest.Usage(10, 1)))
	opts.StorageFault, opts.Clock = nil, nil
	again := resume(t, srv, opts)
	require.NoError(t, again.report().Err)
	again.shutdown()
	after := again.journal()
	require.Greater(t, len(after), len(events)+1)
	end, boot := after[len(events)], after[len(events)+1]
	assert.Equal(t, state.EventStopped, end.Type)
	assert.Equal(t, words.Status, end.Status)
	assert.Equal(t, words.Reason, end.Reason)
	assert.True(t, words.At.Equal(end.At.Time), "stamped when the life ended")
	assert.Equal(t, state.EventStarted, boot.Type, "the words go just before the boot")
	words, err = state.ReadLastWords(opts.StateDir)
	require.NoError(t, err)
	assert.Nil(t, words, "the journaled words are emptied")
	assert.Equal(t, state.StatusStopped, again.state().Status)
	for i, e := range after {
		require.Equal(t, uint64(i+1), e.Seq, "seq has no gaps")
	}
}
