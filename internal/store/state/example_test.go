package state_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
)

// The journal is a being's write-ahead log: each step is one write and
// one fsync, its events numbered by seq. Reading the journal back and
// applying its events, in order, with the rule a living being uses
// rebuilds the being; its money then satisfies the ledger invariant.
func Example_journal() {
	dir, err := os.MkdirTemp("", "being-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := state.Open(dir) // makes the directory 0700
	if err != nil {
		log.Fatal(err)
	}
	at := state.Time{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	journal, err := store.OpenJournal(at, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer journal.Close()

	// Three steps: the cycle's framing, a completion with its cost, a
	// tool call with the mind change and the revenue it brought.
	steps := [][]state.Event{
		{state.CycleStarted(at, 1, chat.Message{Role: chat.RoleUser, Content: "cycle 1"})},
		{
			state.ModelCompleted(at, 1, chat.Usage{}, chat.Message{Role: chat.RoleAssistant, Content: "I will remember it."}),
			state.Debited(at, 1, usd("0.0012"), usd("0.0003"), 1500),
		},
		{
			state.ToolFinished(at, 1, "singularity_memory_remember", "success"),
			state.MemoryAdded(state.Memory{ID: "m1", Kind: "fact", Text: "the sea is salty", CreatedAt: at}),
			state.RevenueCredited(at, 1, usd("0.05"), "finance__finance_sell_report"),
		},
	}
	for _, step := range steps {
		if _, err := journal.AppendStep(step); err != nil {
			log.Fatal(err)
		}
	}

	// Read back: every segment of the directory's journal, in order.
	events, err := state.ReadAll(dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range events {
		fmt.Println(e.Seq, e.Type)
	}

	// Replay onto the state the being started from.
	start := usd("1")
	being := &state.Being{Budget: state.Budget{Starting: start, Remaining: start}}
	for _, e := range events {
		being.Apply(e)
	}
	fmt.Println("cycle", being.Cycle, "journal_seq", being.Seq())
	fmt.Println("remaining", being.Budget.Remaining, "earned", being.Budget.Earned)
	fmt.Println("memories", len(being.Mind.Memories), "conversation", len(being.Conversation))
	totals := state.Totals(events)
	fmt.Println("debited", totals.Debited, "credited", totals.Credited, "consistent:", being.Budget.Check())
	// Output:
	// 1 cycle_started
	// 2 model_completed
	// 3 cost_debited
	// 4 tool_finished
	// 5 memory_added
	// 6 revenue_credited
	// cycle 1 journal_seq 6
	// remaining 1.0485 earned 0.05
	// memories 1 conversation 2
	// debited 0.0015 credited 0.05 consistent: <nil>
}

// A crash in the middle of an append leaves a last line without its
// newline. Opening the journal cuts it off and journals a warning in its
// place: a torn line is never a boot failure.
func ExampleOpenJournal_tornLine() {
	dir, err := os.MkdirTemp("", "being-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, state.JournalFile)

	at := state.Time{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	line := `{"type":"started","seq":1,"at":"2026-12-01T10:00:00.000000Z"}` + "\n"
	torn := `{"type":"cycle_sta`
	if err := os.WriteFile(path, []byte(line+torn), 0o600); err != nil {
		log.Fatal(err)
	}

	journal, err := state.OpenJournal(path, at, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer journal.Close()
	fmt.Println("cut", journal.Repaired(), "bytes; next seq", journal.NextSeq())
	for _, e := range journal.Loaded() {
		fmt.Printf("%d %s %q\n", e.Seq, e.Type, e.Message)
	}
	data, _ := os.ReadFile(path)
	fmt.Println("lines", strings.Count(string(data), "\n"))
	// Output:
	// cut 18 bytes; next seq 3
	// 1 started ""
	// 2 warning "activity journal: removed a torn last line of 18 bytes"
	// lines 2
}

// usd is a decimal amount the examples write out; money.Parse refuses
// anything else.
func usd(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}
