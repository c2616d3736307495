package identity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValid(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"agent-1", true},
		{"wl.1:a_B", true},
		{strings.Repeat("a", 128), true},
		{"", false},
		{strings.Repeat("a", 129), false},
		{"a b", false},
		{"r/1", false},
		{"héte", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Valid(tt.id), "%q", tt.id)
	}
}
