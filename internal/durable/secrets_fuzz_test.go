package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/journalview"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// writeAll sends text through everything a being writes or shows: a step
// whose events hold it (a warning, the model's reply with a tool call
// whose arguments hold it, a memory), a checkpoint whose system prompt
// holds it, a log line, and the journal as `singularity journal` prints
// it in both formats. It returns the files of the state directory and
// the printed outputs.
func writeAll(t *testing.T, secrets *boundary.Secrets, text string) []string {
	t.Helper()
	dir := testkit.BootedDir(t)
	e, st, err := Open(dir, Config{Inline: true, Secrets: secrets})
	require.NoError(t, err)
	defer e.Close()
	args, err := json.Marshal(map[string]string{"content": text})
	require.NoError(t, err)
	at := state.Now()
	reply := chat.Message{Role: chat.RoleAssistant, Content: text, ToolCalls: []chat.ToolCall{{
		ID: "call-1", Type: "function", Function: chat.FunctionCall{Name: "singularity_file_write", Arguments: string(args)},
	}}}
	step := []state.Event{
		state.Warning(at, 1, text),
		state.ModelCompleted(at, 1, chat.Usage{}, reply),
		state.MemoryAdded(state.Memory{ID: "m1", Kind: "fact", Text: text, CreatedAt: at}),
	}
	for _, ev := range e.Step(1, step, at, 1) {
		c, ok := ev.(Committed)
		require.True(t, ok, "%#v", ev)
		for _, applied := range c.Events {
			st.Apply(applied)
		}
	}
	snapshot := *st
	snapshot.Mind.SystemPrompt = text
	for _, ev := range e.Checkpoint(2, snapshot, state.EncodeMessages(snapshot.Conversation), nil, false) {
		switch ev.(type) {
		case Checkpointed, Landed:
		default:
			t.Fatalf("the checkpoint answered %#v", ev)
		}
	}
	_, err = state.Load(dir)
	require.NoError(t, err, "a redacted checkpoint loads")

	var log bytes.Buffer
	logging.Redacting(slog.New(slog.NewJSONHandler(&log, nil)), secrets).
		Info(text, "text", text, "err", errors.New(text), "list", []string{text})
	outputs := []string{log.String()}
	lines, err := journalview.Tail(dir, 1000)
	require.NoError(t, err)
	for _, l := range lines {
		outputs = append(outputs, journalview.Text("Ada", l), string(journalview.JSON("Ada", "ada", l)))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, entry := range entries {
		if entry.Type().IsRegular() {
			data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
			require.NoError(t, err)
			outputs = append(outputs, string(data))
		}
	}
	return outputs
}

// FuzzSecretForms: a registered secret, in whichever covered form
// (identity.Forms) and amid whatever text, appears in none of its covered
// forms in the journal, the state, the log or the journal's printed
// lines. A secret whose forms the same outputs hold when "[redacted]"
// stands in its place (a secret such as "cycle_started", or one that
// "[redacted]" completes) is indistinguishable from them and skipped.
func FuzzSecretForms(f *testing.F) {
	f.Add([]byte("sk-proj-0123456789abcdef"), uint16(0), "the key is ", ".")
	f.Add([]byte("sk-e2e/enc+key&x=1?é-44b1"), uint16(3), "", "")
	f.Add([]byte("Bearer tok-9f3a2c7e"), uint16(1), "header: ", "\n")
	f.Add([]byte(`quote"and\back`), uint16(40), `{"nested":"`, `"}`)
	f.Add([]byte("hmac-secret-value-42"), uint16(200), "b64 ", " end")
	f.Fuzz(func(t *testing.T, secret []byte, pick uint16, prefix, suffix string) {
		if len(secret) < 8 || len(secret) > 256 || len(prefix)+len(suffix) > 1024 {
			t.Skip()
		}
		forms := identity.Forms(secret)
		secrets := boundary.NewSecrets(secret)
		form := string(forms[int(pick)%len(forms)])
		for _, out := range writeAll(t, secrets, prefix+boundary.Redacted+suffix) {
			for _, g := range forms {
				if bytes.Contains([]byte(out), g) {
					t.Skip("the outputs hold the secret without it")
				}
			}
		}
		for _, out := range writeAll(t, secrets, prefix+form+suffix) {
			for _, g := range forms {
				if bytes.Contains([]byte(out), g) {
					t.Fatalf("form %q of the secret is in an output:\n%s", g, out)
				}
			}
		}
	})
}
