package mcpstdio

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// TestStderrLines: lines come without their line ends; a line over the
// limit comes cut and flagged, and the line after it whole.
func TestStderrLines(t *testing.T) {
	type line struct {
		text string
		cut  bool
	}
	tests := []struct {
		name  string
		input string
		max   int
		want  []line
	}{
		{"plain", "a\nbc\n", 8, []line{{"a", false}, {"bc", false}}},
		{"crlf", "a\r\nb\r\n", 8, []line{{"a", false}, {"b", false}}},
		{"no final newline", "a\nb", 8, []line{{"a", false}, {"b", false}}},
		{"blank lines", "\n\na\n", 8, []line{{"", false}, {"", false}, {"a", false}}},
		{"at the limit", "abcd\n", 4, []line{{"abcd", false}}},
		{"at the limit, crlf", "abcd\r\n", 4, []line{{"abcd", false}}},
		{"over the limit", "abcdef\nok\n", 4, []line{{"abcd", true}, {"ok", false}}},
		{"far over the reader's buffer", strings.Repeat("x", 40<<10) + "\nok\n", 16, []line{{strings.Repeat("x", 16), true}, {"ok", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := newStderrLines(strings.NewReader(tt.input), tt.max)
			var got []line
			for {
				text, cut, err := lines.next()
				if len(text) > 0 || cut || err == nil {
					got = append(got, line{string(text), cut})
				}
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("next: %v", err)
					}
					break
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines %+v, want %+v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestStartReportsTheOSError: a command that cannot start is an error of
// Start, with the operating system's reason.
func TestStartReportsTheOSError(t *testing.T) {
	_, err := Start(Config{Path: "/nonexistent/las"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start = %v, want an error wrapping os.ErrNotExist", err)
	}
}
