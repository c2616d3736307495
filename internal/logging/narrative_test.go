package logging

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"ééééé", 2, "éé…"},
	} {
		assert.Equal(t, tc.want, Cut(tc.in, tc.limit), tc.in)
	}
}

// TestUSDIsExact: money in a log line is the exact decimal, whatever its
// size, so a cost of 0.01038 never reads as 0.01 beside 0.00495.
func TestUSDIsExact(t *testing.T) {
	for in, want := range map[string]string{"0.01038": "0.01038 USD", "0.00495": "0.00495 USD", "0": "0 USD", "12.3": "12.3 USD", "0.000000000001": "0.000000000001 USD"} {
		assert.Equal(t, want, USD(testkit.USD(in)), in)
	}
}

func TestNarrator(t *testing.T) {
	at := state.Time{Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	reply := chat.Message{Role: chat.RoleAssistant, Content: strings.Repeat("r", 250)}
	steps := []observe.Step{
		{Events: []state.Event{state.Started(at)}},
		{Elapsed: 1500 * time.Microsecond, Finish: "stop", Events: []state.Event{
			state.ModelCompleted(at, 2, chat.Usage{PromptTokens: 10, CompletionTokens: 5}, reply),
			state.Debited(at, 2, testkit.USD("0.0000123"), money.Zero, 15),
		}},
		{Elapsed: 2 * time.Millisecond, Events: []state.Event{
			state.ToolFinished(at, 2, "echo__echo", "success"),
			state.RevenueCredited(at, 2, testkit.USD("1"), "x"),
		}},
	}
	for _, tc := range []struct {
		level slog.Level
		want  []string
	}{
		{slog.LevelInfo, []string{
			`level=INFO msg=completion being=Ada agent_id=agent-1 cycle=2 prompt_tokens=10 completion_tokens=5 cost="0.0000123 USD" finish=stop duration=1.5ms`,
			`level=INFO msg="tool call" being=Ada agent_id=agent-1 cycle=2 tool=echo__echo status=success duration=2ms`,
		}},
		{slog.LevelDebug, []string{
			`level=INFO msg=completion being=Ada agent_id=agent-1 cycle=2 prompt_tokens=10 completion_tokens=5 cost="0.0000123 USD" finish=stop duration=1.5ms tool_calls=0 reply=` + strings.Repeat("r", 200) + `…`,
			`level=INFO msg="tool call" being=Ada agent_id=agent-1 cycle=2 tool=echo__echo status=success duration=2ms`,
		}},
		{slog.LevelWarn, nil},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
			n := NewNarrator(log)
			for _, s := range steps {
				s.Being = observe.Being{Name: "Ada", ID: "ada", AgentID: "agent-1"}
				n.Step(s)
			}
			var got []string
			if out := strings.TrimSpace(buf.String()); out != "" {
				got = strings.Split(out, "\n")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
