package durable_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/wisent/singularity/internal/durable"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
)

// A being's step through its engine. Create writes a fresh being's
// directory; Step journals a step's events and answers Committed once
// they are appended and fsynced, numbered and stamped: only then does the
// owner apply them. Inline runs each write on the caller's goroutine, so
// the answer comes from the verb itself; a living being lets the family's
// writer pool run it and hears the answer through Handle.
func Example_step() {
	root, err := os.MkdirTemp("", "durable-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	at := state.Time{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}

	e := durable.New(durable.Config{Inline: true})
	defer e.Close()
	show(e.Create(1, filepath.Join(root, "ada"), freshBeing(at)))
	show(e.Step(2, []state.Event{state.Started(at)}, at, 0))
	show(e.Step(3, []state.Event{
		state.CycleStarted(at, 1, chat.Message{Role: chat.RoleUser, Content: "Begin autonomous cycle 1."}),
		state.Warning(at, 1, "a step holds any number of events"),
	}, at, 1))
	// Output:
	// created (tag 1)
	// committed (tag 2): seq 1 started
	// committed (tag 3): seq 2 cycle_started, seq 3 warning
}

// A step the fence refuses: a family across machines gives the engine a
// Fence (internal/fence) that must accept every step once the journal
// holds it. A refusal is final: the step stays appended but does not
// count, Fenced answers, and every later step is answered Fenced again
// without being written. The owner stops without saving anything.
func Example_refusedStep() {
	root, err := os.MkdirTemp("", "durable-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	at := state.Time{Time: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}

	lock := &lockFence{held: true}
	e := durable.New(durable.Config{Inline: true, Fence: lock})
	defer e.Close()
	show(e.Create(1, filepath.Join(root, "ada"), freshBeing(at)))
	show(e.Step(2, []state.Event{state.Started(at)}, at, 0))
	lock.held = false // another member took the being's lock
	show(e.Step(3, []state.Event{state.Warning(at, 1, "not to be counted")}, at, 1))
	show(e.Step(4, []state.Event{state.Warning(at, 1, "not even written")}, at, 1))
	fmt.Println("fence asked for seqs", lock.asked)
	// Output:
	// created (tag 1)
	// committed (tag 2): seq 1 started
	// fenced: the lock is another holder's
	// fenced: the lock is another holder's
	// fence asked for seqs [1 2]
}

// lockFence accepts a step while held, as the holder of a lock does.
type lockFence struct {
	held  bool
	asked []uint64
}

func (f *lockFence) Fence(last uint64) error {
	f.asked = append(f.asked, last)
	if !f.held {
		return errors.New("the lock is another holder's")
	}
	return nil
}

// show prints what the engine answered.
func show(events []durable.Event) {
	for _, ev := range events {
		switch ev := ev.(type) {
		case durable.Created:
			if ev.Err != nil {
				log.Fatal(ev.Err)
			}
			fmt.Printf("created (tag %d)\n", ev.Tag)
		case durable.Committed:
			fmt.Printf("committed (tag %d):", ev.Tag)
			for i, e := range ev.Events {
				if i > 0 {
					fmt.Print(",")
				}
				fmt.Printf(" seq %d %s", e.Seq, e.Type)
			}
			fmt.Println()
		case durable.Fenced:
			fmt.Println("fenced:", ev.Err)
		default:
			fmt.Printf("%T\n", ev)
		}
	}
}

// freshBeing is a new being with ten dollars.
func freshBeing(at state.Time) *state.Being {
	ten := money.FromInt(10)
	return &state.Being{
		SchemaVersion: state.SchemaVersion,
		Identity:      state.Identity{AgentID: "agent-ada", Name: "Ada"},
		Status:        state.StatusStarting,
		Budget:        state.Budget{Starting: ten, Remaining: ten},
		StartedAt:     at,
		UpdatedAt:     at,
		JournalSeq:    new(uint64),
	}
}
