package state

import (
	"strconv"
	"testing"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
)

// conversationOf builds a conversation of cycles, each a framing message
// followed by n[i]-1 other messages.
func conversationOf(n ...int) []chat.Message {
	var conv []chat.Message
	for c, size := range n {
		conv = append(conv, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + strconv.Itoa(c+1) + "."})
		for range size - 1 {
			conv = append(conv, chat.Message{Role: chat.RoleAssistant, Content: "x"})
		}
	}
	return conv
}

func TestWindowEpoch(t *testing.T) {
	tests := []struct {
		name   string
		cycles []int
		limit  int
		kept   int
	}{
		{"within the limit", []int{4, 4, 4}, 12, 12},
		{"no window", []int{4, 4, 4}, 0, 12},
		// 13 > 12: the earliest framing from which the messages up to
		// the running cycle's framing (index 8) are at most 6 is cycle
		// 2's (index 4): 9 messages kept with the running cycle's.
		{"past the limit, cut to half", []int{4, 4, 5}, 12, 9},
		{"a long running cycle does not move the cut", []int{4, 4, 9}, 12, 13},
		{"the previous cycle too long for half", []int{2, 10, 3}, 12, 3},
		{"one cycle only", []int{20}, 12, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conv := conversationOf(tt.cycles...)
			kept, archived := WindowEpoch(conv, tt.limit)
			if len(kept) != tt.kept || len(kept)+len(archived) != len(conv) {
				t.Fatalf("kept %d, archived %d of %d; want kept %d", len(kept), len(archived), len(conv), tt.kept)
			}
			if len(archived) > 0 && !IsFraming(kept[0]) {
				t.Errorf("the window starts at %q, not at a framing message", kept[0].Content)
			}
			enc := EncodeMessages(conv)
			ek, ea := WindowEpochEncoded(enc, tt.limit)
			if len(ek) != len(kept) || len(ea) != len(archived) {
				t.Errorf("encoded: kept %d, archived %d; want %d, %d", len(ek), len(ea), len(kept), len(archived))
			}
		})
	}
}

// TestWindowEpochStaysPut: while a cycle runs past the limit its requests
// share one window start, and once the checkpoint keeps that window the
// conversation grows again to the limit before the next cut.
func TestWindowEpochStaysPut(t *testing.T) {
	const limit = 20
	conv := conversationOf(4, 4, 4, 4, 4)
	starts := map[string]bool{conv[0].Content: true}
	cuts := 0
	for cycle := 6; cycle <= 30; cycle++ {
		conv = append(conv, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + strconv.Itoa(cycle) + "."})
		var first string
		for round := 0; round < 3; round++ {
			kept, _ := WindowEpoch(conv, limit)
			if round == 0 {
				first = kept[0].Content
			} else if kept[0].Content != first {
				t.Fatalf("cycle %d round %d: the window moved from %q to %q within the cycle", cycle, round, first, kept[0].Content)
			}
			conv = append(conv, chat.Message{Role: chat.RoleAssistant, Content: "x"})
		}
		kept, archived := WindowEpoch(conv, limit)
		if len(archived) > 0 {
			cuts++
			if len(kept) > limit/2+4 {
				t.Errorf("cycle %d: cut back to %d messages, more than half the limit and one cycle", cycle, len(kept))
			}
		}
		starts[kept[0].Content] = true
		conv = append([]chat.Message(nil), kept...) // the checkpoint keeps the window
	}
	// 25 cycles of 4 messages, cut from 20+ back to about 10: an epoch
	// is 2–3 cycles, so at most about one cut in two cycles.
	if cuts == 0 || cuts > 13 {
		t.Errorf("%d cuts in 25 cycles", cuts)
	}
	if len(starts) != cuts+1 {
		t.Errorf("%d window starts for %d cuts: the window moved between cuts", len(starts), cuts)
	}
}
