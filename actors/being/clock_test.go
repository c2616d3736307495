package being_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// steps is an Observer that keeps the steps it hears of.
type steps struct {
	mu   sync.Mutex
	seen []observe.Step
}

func (s *steps) Step(st observe.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, st)
}
func (*steps) CycleEnded(observe.Being, uint64, string) {}
func (*steps) LasStarted(observe.Being, string)         {}
func (*steps) LasRestarted(observe.Being, string)       {}
func (*steps) DurableWrite(time.Duration)               {}

// TestToolElapsedIsReadFromTheBeingsClock: how long a tool call took is
// measured on the being's one clock (Options.Clock), not the wall's. The
// clock here moves a whole second each time it is read, so the built-in
// call, done in microseconds of real time, lasts whole seconds on it.
func TestToolElapsedIsReadFromTheBeingsClock(t *testing.T) {
	t.Parallel()
	srv := newBrama(t)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		if len(r.Completion.Messages) > 0 && r.Completion.Messages[len(r.Completion.Messages)-1].Role == chat.RoleTool {
			return bramatest.TextReply("done", bramatest.Usage(10, 5))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(10, 5), bramatest.Call("recall-1", builtin.MemoryRecall, `{"query":"price"}`))
	})
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	reads := 0
	obs := &steps{}
	opts := options(t, being.Run)
	opts.Clock = testkit.ReadClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return base.Add(time.Duration(reads) * time.Second)
	})
	opts.Observer = obs
	opts.MaxCycles = 1
	h := start(t, srv, opts)
	h.reportFor(1)
	h.shutdown()

	obs.mu.Lock()
	defer obs.mu.Unlock()
	var tool *observe.Step
	for i, st := range obs.seen {
		for _, e := range st.Events {
			if e.Type == state.EventToolFinished {
				tool = &obs.seen[i]
			}
		}
	}
	require.NotNil(t, tool, "the tool call's step was observed")
	require.GreaterOrEqual(t, tool.Elapsed, time.Second, "measured on the being's clock")
	require.Zero(t, tool.Elapsed%time.Second, "whole seconds of the being's clock: %s", tool.Elapsed)
}
