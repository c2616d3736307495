package accounts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
)

// benchFamily writes a family of n children under one root, every being
// a few cycles into its life (framing, completion with its debit, a tool
// step, the reply) with a checkpoint after its third cycle: what
// `singularity status` reads at the end of `make scale-run`.
func benchFamily(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "accounts-bench-")
		if err == nil {
			b.Cleanup(func() { os.RemoveAll(dir) })
			root = dir
		}
	}
	at := state.Now()
	endowment := testkit.USD("1.5")
	live := func(dir, name string, starting money.Amount, before func(*state.Journal, *state.Being)) {
		id := state.Identity{AgentID: "agent-bench", Name: name}
		st := &state.Being{SchemaVersion: state.SchemaVersion, Identity: id, Status: state.StatusRunning,
			Budget: state.Budget{Starting: starting, Remaining: starting}, JournalSeq: new(uint64)}
		store, _, _, err := state.Boot(dir, false, id, func() (*state.Being, error) { return st, nil })
		if err != nil {
			b.Fatal(err)
		}
		j, err := store.OpenJournal(at, 0)
		if err != nil {
			b.Fatal(err)
		}
		step := func(events ...state.Event) {
			written, err := j.AppendStep(events)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range written {
				st.Apply(e)
			}
		}
		if before != nil {
			before(j, st)
		}
		for c := uint64(1); c <= 5; c++ {
			step(state.CycleStarted(at, c, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + strconv.FormatUint(c, 10) + ". Balance: 1.49 USD. Earned: 0 USD. Net profit: -0.01 USD. Current model: test-model. Recent actions: singularity_memory_recall:success. Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."}))
			call := chat.ToolCall{ID: "call_1", Type: "function", Function: chat.FunctionCall{Name: "singularity_memory_recall", Arguments: `{"query":"price"}`}}
			step(state.ModelCompleted(at, c, chat.Usage{PromptTokens: 400, CompletionTokens: 20, TotalTokens: 420}, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call}}),
				state.Debited(at, c, testkit.USD("0.000072"), testkit.USD("0.0000001"), 420))
			tool := state.ToolFinished(at, c, "singularity_memory_recall", "success")
			tool.Chat = &chat.Message{Role: chat.RoleTool, ToolCallID: "call_1", Name: "singularity_memory_recall", Content: `{"chat_id":null,"content":{"memories":[]},"error_code":null,"message_id":null,"status":"success"}`}
			tool.Action = &state.Action{Cycle: c, Tool: "singularity_memory_recall", Status: "success", At: at}
			step(tool)
			step(state.ModelCompleted(at, c, chat.Usage{PromptTokens: 400, CompletionTokens: 5, TotalTokens: 405}, chat.Message{Role: chat.RoleAssistant, Content: "done"}),
				state.Debited(at, c, testkit.USD("0.000063"), testkit.USD("0.0000001"), 405))
			if c == 3 {
				snap := *st
				seq := j.NextSeq() - 1
				snap.JournalSeq = &seq
				if err := store.Save(&snap); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := j.Close(); err != nil {
			b.Fatal(err)
		}
	}
	live(root, "Root", money.FromInt(int64(n)*2), func(j *state.Journal, st *state.Being) {
		for i := range n {
			child := state.Child{ID: fmt.Sprintf("child-%d", i), Name: fmt.Sprintf("C%d", i), StateDir: filepath.Join(root, "children", fmt.Sprintf("child-%d", i)), CreatedAt: at, Status: state.StatusRunning, Endowment: &endowment}
			live(child.StateDir, child.Name, endowment, nil)
			for _, e := range []state.Event{state.EndowmentGranted(child, endowment), state.ChildAdded(child)} {
				written, err := j.AppendStep([]state.Event{e})
				if err != nil {
					b.Fatal(err)
				}
				st.Apply(written[0])
			}
		}
	})
	return root
}

// BenchmarkRead is `singularity status`'s reading of a family of 1,000
// and of 10,000 beings (docs/money.md#singularity-status): every state
// checkpoint caught up with its journal, every journal summed.
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("beings=%d", n+1), func(b *testing.B) {
			dir := benchFamily(b, n)
			b.ResetTimer()
			for b.Loop() {
				fam, err := accounts.Read(dir)
				if err != nil {
					b.Fatal(err)
				}
				if len(fam.Beings) != n+1 || !fam.Totals.Exact() {
					b.Fatalf("%d beings read, exact %v, unreadable %v", len(fam.Beings), fam.Totals.Exact(), fam.Unreadable)
				}
			}
		})
	}
}
