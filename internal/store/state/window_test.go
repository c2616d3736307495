package state

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/prompt/framing"
	"github.com/wisent/singularity/internal/wire/chat"
)

// conv builds a conversation from a compact spec: F framing, u other user
// message, a assistant, t tool.
func conv(spec string) []chat.Message {
	var out []chat.Message
	for i, c := range spec {
		switch c {
		case 'F':
			out = append(out, chat.Message{Role: chat.RoleUser, Content: framing.Prefix + strconv.Itoa(i) + ". Balance: 1 USD."})
		case 'u':
			out = append(out, chat.Message{Role: chat.RoleUser, Content: "External observation for this cycle: Begin autonomous cycle 9"})
		case 'a':
			out = append(out, chat.Message{Role: chat.RoleAssistant, Content: "Begin autonomous cycle 5"})
		case 't':
			out = append(out, chat.Message{Role: chat.RoleTool, Content: framing.Prefix})
		}
	}
	return out
}

func specOf(msgs []chat.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case IsFraming(m):
			b.WriteByte('F')
		case m.Role == chat.RoleUser:
			b.WriteByte('u')
		case m.Role == chat.RoleAssistant:
			b.WriteByte('a')
		default:
			b.WriteByte('t')
		}
	}
	return b.String()
}

func TestWindow(t *testing.T) {
	tests := []struct {
		name        string
		conv        string
		limit       int
		kept, archd string
	}{
		{"empty", "", 3, "", ""},
		{"under limit", "Fa", 3, "Fa", ""},
		{"at limit", "FataFa", 6, "FataFa", ""},
		{"cut at framing", "FataFa", 5, "Fa", "FataFa"[:4]},
		{"cut at earliest fitting framing", "FaFaFa", 4, "FaFa", "Fa"},
		{"keeps tool results with their call", "FatatFatata", 7, "Fatata", "Fatat"},
		{"stimulus stays with its framing", "FuaFua", 4, "Fua", "Fua"},
		{"lookalikes are not framing", "Fatata", 3, "Fatata", ""},
		{"one cycle longer than the limit", "FaFatatata", 3, "Fatatata", "Fa"},
		{"no framing at all", "aaaa", 2, "aaaa", ""},
		{"no limit", "FaFaFa", 0, "FaFaFa", ""},
		{"limit one", "FaF", 1, "F", "Fa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := conv(tt.conv)
			kept, archived := Window(c, tt.limit)
			assert.Equal(t, tt.kept, specOf(kept))
			assert.Equal(t, tt.archd, specOf(archived))
			assert.Equal(t, len(c), len(kept)+len(archived))
			if len(c) > 0 {
				assert.Equal(t, c, append(append([]chat.Message{}, archived...), kept...))
			}
		})
	}
}
