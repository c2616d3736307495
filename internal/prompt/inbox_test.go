package prompt

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
)

func TestMessage(t *testing.T) {
	tests := []struct {
		name string
		m    state.InMessage
		want string
	}{
		{"operator", state.InMessage{ID: "m1", From: "operator", Text: "buy low"}, "Message from the operator: buy low"},
		{"parent", state.InMessage{ID: "m2", From: "b-1", Name: "Ada", Relation: "parent", Text: "well done"}, "Message from Ada (parent): well done"},
		{"child", state.InMessage{ID: "m3", From: "c-9", Name: "Bo", Relation: "child", Text: "need money"}, "Message from Bo (child): need money"},
		{"no name", state.InMessage{ID: "m4", From: "c-9", Relation: "child", Text: "x"}, "Message from c-9 (child): x"},
		{"empty text", state.InMessage{ID: "m5", From: "operator"}, "Message from the operator: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Message(tc.m))
		})
	}
}

func TestWithMessages(t *testing.T) {
	tests := []struct {
		name  string
		inbox []state.InMessage
		want  string
	}{
		{"none", nil, "Begin."},
		{"one", []state.InMessage{{From: "operator", Text: "hi"}}, "Begin.\n\nMessage from the operator: hi"},
		{"in order", []state.InMessage{{From: "operator", Text: "a"}, {From: "p", Name: "Ada", Relation: "parent", Text: "b"}},
			"Begin.\n\nMessage from the operator: a\n\nMessage from Ada (parent): b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, WithMessages("Begin.", tc.inbox))
		})
	}
}
