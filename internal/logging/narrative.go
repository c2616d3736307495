package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
)

// ReplyLimit is how many characters of a completion's reply text the
// narrative log shows at debug (docs/configuration.md#logging).
const ReplyLimit = 200

// Narrator writes the narrative log of docs/configuration.md#logging: at
// info one line per completion ("completion": being, agent_id, cycle,
// prompt_tokens, completion_tokens, cost, finish, duration) and one line
// per tool call ("tool call": being, agent_id, cycle, tool, status,
// duration); when debug is enabled the completion line (still at info)
// also carries tool_calls and the reply text, cut at ReplyLimit
// characters. Money is the exact decimal, as in the journal (USD). It
// implements observe.Observer and is safe
// for concurrent use.
type Narrator struct {
	log *slog.Logger

	mu    sync.Mutex
	being map[string]*slog.Logger // log with the being's attributes, by agent id
}

var _ observe.Observer = (*Narrator)(nil)

// NewNarrator returns a narrator writing to log.
func NewNarrator(log *slog.Logger) *Narrator {
	return &Narrator{log: log, being: map[string]*slog.Logger{}}
}

func (n *Narrator) of(b observe.Being) *slog.Logger {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.being[b.ID]
	if !ok {
		l = n.log.With("being", b.Name, "agent_id", b.AgentID)
		n.being[b.ID] = l
	}
	return l
}

// Step writes the lines of a completion's or a tool call's step.
func (n *Narrator) Step(s observe.Step) {
	ctx := context.Background()
	for i := range s.Events {
		e := &s.Events[i]
		switch e.Type {
		case state.EventModelCompleted:
			log := n.of(s.Being)
			if !log.Enabled(ctx, slog.LevelInfo) {
				return
			}
			cost := money.Zero
			for j := i + 1; j < len(s.Events); j++ {
				if s.Events[j].Type == state.EventCostDebited {
					cost = s.Events[j].Amount
					break
				}
			}
			attrs := []slog.Attr{
				slog.Uint64("cycle", e.Cycle),
				slog.Uint64("prompt_tokens", e.Usage.PromptTokens),
				slog.Uint64("completion_tokens", e.Usage.CompletionTokens),
				slog.String("cost", USD(cost)),
				slog.String("finish", s.Finish),
				slog.Duration("duration", s.Elapsed.Round(time.Microsecond)),
			}
			if e.Chat != nil && log.Enabled(ctx, slog.LevelDebug) {
				// At debug the same line also carries the reply.
				attrs = append(attrs, slog.Int("tool_calls", len(e.Chat.ToolCalls)), slog.String("reply", Cut(e.Chat.Content, ReplyLimit)))
			}
			log.LogAttrs(ctx, slog.LevelInfo, "completion", attrs...)
		case state.EventToolFinished:
			n.of(s.Being).LogAttrs(ctx, slog.LevelInfo, "tool call",
				slog.Uint64("cycle", e.Cycle),
				slog.String("tool", e.Tool),
				slog.String("status", e.Status),
				slog.Duration("duration", s.Elapsed.Round(time.Microsecond)))
		}
	}
}

// CycleEnded writes nothing: the cycle's lines are its completions and
// tool calls.
func (*Narrator) CycleEnded(observe.Being, uint64, string) {}

// LasStarted writes nothing.
func (*Narrator) LasStarted(observe.Being, string) {}

// LasRestarted writes nothing: the being logs a Las restart itself.
func (*Narrator) LasRestarted(observe.Being, string) {}

// DurableWrite writes nothing.
func (*Narrator) DurableWrite(time.Duration) {}

// Cut returns s cut to at most limit characters, with "…" in place of
// what was cut.
func Cut(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	i, n := 0, 0
	for i = range s {
		if n == limit {
			break
		}
		n++
	}
	return s[:i] + "…"
}

// USD is an amount in a log line: its exact decimal text, as the journal
// writes it, and " USD". Every log line shows money this way, so two lines
// never disagree by rounding.
func USD(a money.Amount) string { return a.String() + " USD" }
