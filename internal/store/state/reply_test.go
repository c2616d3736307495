package state

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/wire/chat"
)

func TestLastReply(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, tt := range []struct {
		name string
		conv []chat.Message
		want string
	}{
		{"none", nil, ""},
		{"no assistant text", []chat.Message{{Role: "user", Content: "hi"}, {Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "1"}}}}, ""},
		{"the newest with text", []chat.Message{
			{Role: "assistant", Content: "old"},
			{Role: "assistant", Content: "\n  Surveyed three shops.  \nThen sold the report."},
			{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "2"}}},
			{Role: "tool", Content: "ok"},
		}, "Surveyed three shops."},
		{"cut", []chat.Message{{Role: "assistant", Content: long}}, strings.Repeat("é", 159) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &Being{Conversation: tt.conv}
			assert.Equal(t, tt.want, b.LastReply())
			b.HoldEncoded()
			assert.Equal(t, tt.want, b.LastReply(), "held encoded")
		})
	}
}
