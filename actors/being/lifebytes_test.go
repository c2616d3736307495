package being_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// updateLifeBytes rewrites testdata/life_bytes.json from this code: run
// once, on the code whose bytes are the reference, with
// `go test ./actors/being -run TestLifeBytes -update-life-bytes`.
var updateLifeBytes = flag.Bool("update-life-bytes", false, "rewrite testdata/life_bytes.json")

// lifeBytes is what a deterministic life sends and writes: the text of
// every framing message, the SHA-256 of every request body in order, and
// the final state.json.
type lifeBytes struct {
	Framings  []string `json:"framings"`
	Requests  []string `json:"request_sha256"`
	StateJSON string   `json:"state_json"`
}

// TestLifeBytes lives a being, in each prompt layout, for sixteen cycles in a window of twenty
// messages, with a clock that ticks a second each time it is read, and a
// Brama whose answers depend only on the request: each cycle recalls a
// memory, every third one also calls a tool that does not exist, and
// then replies. The framing texts, the request bodies and state.json
// must be byte for byte those of testdata/life_bytes.json, which the code
// before the conversation was held packed wrote (main at af64936): how a
// being holds its messages in memory changes nothing it sends or writes.
// (Its state.json's instants were written again once a tool call's
// duration was read from the being's clock, one more reading per call;
// the framings and request bodies are af64936's.)
// Two lives in one run must also agree, so the figure is no accident of
// the clock.
func TestLifeBytes(t *testing.T) {
	lives := map[string]lifeBytes{}
	for _, layout := range []prompt.Layout{prompt.LayoutSeed, prompt.LayoutStable} {
		first := liveDeterministicLife(t, layout)
		second := liveDeterministicLife(t, layout)
		require.Equal(t, first, second, "two lives of the same script, %s layout", layout)
		lives[string(layout)] = first
	}

	path := filepath.Join("testdata", "life_bytes.json")
	if *updateLifeBytes {
		data, err := json.MarshalIndent(lives, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
		return
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var wants map[string]lifeBytes
	require.NoError(t, json.Unmarshal(data, &wants))
	require.Len(t, wants, len(lives))
	for layout, got := range lives {
		want := wants[layout]
		require.Equal(t, want.Framings, got.Framings, "the framing texts, %s layout", layout)
		require.Equal(t, len(want.Requests), len(got.Requests), "the number of requests, %s layout", layout)
		for i := range want.Requests {
			require.Equal(t, want.Requests[i], got.Requests[i], "request %d's body, %s layout", i, layout)
		}
		require.Equal(t, want.StateJSON, got.StateJSON, "state.json, %s layout", layout)
	}
}

// liveDeterministicLife lives the script of TestLifeBytes once.
func liveDeterministicLife(t *testing.T, layout prompt.Layout) lifeBytes {
	t.Helper()
	const cycles, window = 16, 20
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	ticks := 0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		ticks++
		return base.Add(time.Duration(ticks) * time.Second)
	}

	srv := newBrama(t)
	srv.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		msgs := r.Completion.Messages
		cycle, calls := 0, 0
		for _, m := range msgs {
			if state.IsFraming(m) {
				cycle++
				calls = 0
			}
			if m.Role == chat.RoleTool {
				calls++
			}
		}
		usage := bramatest.Usage(uint64(300+len(msgs)), uint64(7+calls))
		switch {
		case calls == 0:
			return bramatest.ToolCallsReply(usage, bramatest.Call(fmt.Sprintf("recall-%d", cycle), builtin.MemoryRecall, `{"query":"price"}`))
		case calls == 1 && cycle%3 == 0:
			return bramatest.ToolCallsReply(usage, bramatest.Call(fmt.Sprintf("nope-%d", cycle), "no_such_tool", `{}`))
		}
		return bramatest.TextReply(fmt.Sprintf("done after %d calls", calls), usage)
	})
	opts := options(t, being.Run)
	opts.Clock = testkit.ReadClock(now)
	opts.PromptLayout = layout
	opts.ContextMessages = window
	opts.MaxCycles = cycles // then idle: the life ends where the script does
	opts.Pricing.InputPerMillion = testkit.USD("0.15")
	opts.Pricing.OutputPerMillion = testkit.USD("0.6")
	h := startWith(t, srv, opts, being.NewState(opts.Identity, opts.StartingBalance, opts.Model, state.Time{Time: base}))
	h.reportFor(cycles)
	h.shutdown()

	var got lifeBytes
	for _, e := range h.journal() {
		if e.Type == state.EventCycleStarted {
			got.Framings = append(got.Framings, e.Messages[0].Content)
		}
	}
	for _, r := range srv.Completions() {
		sum := sha256.Sum256(r.Body)
		got.Requests = append(got.Requests, hex.EncodeToString(sum[:]))
	}
	got.StateJSON = h.fileText("state.json")
	require.GreaterOrEqual(t, len(got.Framings), cycles)
	return got
}
