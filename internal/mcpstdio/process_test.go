package mcpstdio

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
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
			lines := newStderrLines(strings.NewReader(tt.input), tt.max, 1<<20)
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

// TestStderrLinesStop: a line longer than stop ends the stream, after
// the lines before it; one of exactly stop bytes does not.
func TestStderrLinesStop(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    []string
		tooLong bool
	}{
		{"at stop", "a\n" + strings.Repeat("x", 64) + "\r\nb\n", []string{"a", strings.Repeat("x", 16), "b"}, false},
		{"over stop", "a\n" + strings.Repeat("x", 65) + "\nb\n", []string{"a"}, true},
		{"over stop without a line end", "a\n" + strings.Repeat("x", 65), []string{"a"}, true},
		{"over stop past the reader's buffer", "a\n" + strings.Repeat("x", 40<<10) + "\nb\n", []string{"a"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := newStderrLines(strings.NewReader(tt.input), 16, 64)
			var got []string
			var err error
			for err == nil {
				var text []byte
				text, _, err = lines.next()
				if len(text) > 0 {
					got = append(got, string(text))
				}
			}
			if tooLong := errors.Is(err, errStderrLineTooLong); tooLong != tt.tooLong {
				t.Fatalf("next ended with %v, want errStderrLineTooLong %v", err, tt.tooLong)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStderrLineOverOneMiB: after a stderr line longer than 1 MiB no
// more of the server's stderr is passed on, and the session warns once.
func TestStderrLineOverOneMiB(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
		logs  bytes.Buffer
	)
	script := `echo before >&2; head -c 1100000 /dev/zero | tr '\0' x >&2; echo >&2; echo after >&2; head -c 1100000 /dev/zero | tr '\0' y >&2; echo >&2`
	s, err := Start(Config{
		Path:   "/bin/sh",
		Args:   []string{"-c", script},
		Env:    []string{"PATH=" + os.Getenv("PATH")},
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil)),
		Stderr: func(_ int, line string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, line)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	s.Kill(errors.New("the test is done with it"))
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || lines[0] != "before" {
		t.Errorf("stderr lines %q, want only %q", lines, "before")
	}
	if n := strings.Count(logs.String(), "stderr line longer than 1 MiB"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestStartReportsTheOSError: a command that cannot start is an error of
// Start, with the operating system's reason.
func TestStartReportsTheOSError(t *testing.T) {
	_, err := Start(Config{Path: "/nonexistent/las"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Start = %v, want an error wrapping os.ErrNotExist", err)
	}
}
