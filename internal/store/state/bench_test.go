package state

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// benchBeing is a being whose conversation holds n messages in cycles of
// four (framing, assistant with a tool call, tool result, reply), each
// message a few hundred bytes as in real life.
func benchBeing(n int) *Being {
	b := &Being{
		SchemaVersion: SchemaVersion,
		Identity:      Identity{AgentID: "bench", Name: "Ada", PolicySequence: 1},
		Mind:          Mind{SystemPrompt: strings.Repeat("You are Ada. ", 40), Rules: []string{"be frugal"}},
		Status:        StatusRunning,
		Budget:        Budget{Starting: money.FromInt(10), Remaining: mustParse("9.123456789012"), APISpent: mustParse("0.876543210988")},
		StartedAt:     Now(),
		UpdatedAt:     Now(),
	}
	for i := 0; len(b.Conversation) < n; i++ {
		c := strconv.Itoa(i)
		b.Conversation = append(b.Conversation,
			chat.Message{Role: chat.RoleUser, Content: framing.Prefix + c + ". Balance: 9.98 USD. Earned: 0 USD. Net profit: -0.02 USD. Current model: any. Recent actions: singularity_memory_remember:success. Inspect opportunities and choose the next useful action. A plain response ends only this cycle; the being continues living while solvent."},
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_" + c, Type: "function", Function: chat.FunctionCall{Name: "singularity_memory_remember", Arguments: `{"kind":"lead","text":"Bakery owner wants a weekly price survey."}`}}}},
			chat.Message{Role: chat.RoleTool, ToolCallID: "call_" + c, Name: "singularity_memory_remember", Content: `{"chat_id":null,"content":{"memory_id":"0b6f2f3e-3a0c-4f3e-9d55-2f6a1c0e8b11"},"error_code":null,"message_id":null,"status":"success"}`},
			chat.Message{Role: chat.RoleAssistant, Content: "Noted the lead; will follow up next cycle."},
		)
	}
	b.Conversation = b.Conversation[:n]
	return b
}

// BenchmarkSave measures one atomic save (write, fsync, rename, fsync
// directory). "windowed" applies the 200-message window first, as the
// being does, so a save stays flat however long the being has lived.
func BenchmarkSave(b *testing.B) {
	for _, n := range []int{10, 200, 10_000} {
		for _, windowed := range []bool{false, true} {
			if windowed && n <= 200 {
				continue
			}
			name := fmt.Sprintf("messages=%d", n)
			being := benchBeing(n)
			if windowed {
				name += "/windowed=200"
				being.Conversation, _ = Window(being.Conversation, 200)
			}
			b.Run(name, func(b *testing.B) {
				s, err := Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				data, _ := Encode(being)
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Save(being); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkJournalAppend measures one fsynced journal append. Its cost
// does not depend on the conversation; the sizes are there to show it.
func BenchmarkJournalAppend(b *testing.B) {
	for _, n := range []int{10, 200, 10_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			being := benchBeing(n)
			s, err := Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			j, err := s.OpenJournal(Now(), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			e := CostDebited(Now(), being.Cycle, mustParse("0.000034277778"))
			b.ReportAllocs()
			for b.Loop() {
				if err := j.Append(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWindowAndArchive measures a round's conversation upkeep at the
// window's edge: one cycle of four messages leaves the window and is
// archived (fsynced).
func BenchmarkWindowAndArchive(b *testing.B) {
	being := benchBeing(204)
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	a, err := s.OpenArchive()
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	b.ReportAllocs()
	for b.Loop() {
		_, archived := Window(being.Conversation, 200)
		if err := a.Append(archived...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode is the CPU part of a save (marshal and indent), without
// the file system.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{10, 200, 10_000} {
		being := benchBeing(n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(being); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode measures reading one state.json back (Decode): what
// loading a being costs before its journal tail, and most of what
// `singularity status` pays per being.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{10, 200} {
		data, err := Encode(benchBeing(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode("state.json", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
