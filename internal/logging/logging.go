// Package logging builds the one *slog.Logger a process uses: tint's coloured
// handler on a terminal, plain text elsewhere, JSON on request
// (docs/configuration.md#logging). Logs always go to stderr; stdout is
// reserved for command output.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format ("auto", "text", "json"). "auto" picks tint when w is
// a terminal and plain text otherwise.
func New(w io.Writer, level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
	case "auto", "":
		if isTerminal(w) {
			return slog.New(tint.NewHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly})), nil
		}
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})), nil
	default:
		return nil, fmt.Errorf("log format %q: want auto, text or json", format)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// AtLeast returns a logger that passes on only records at level or above
// to log's handler; libraries that chat at info (protoactor) get one.
func AtLeast(log *slog.Logger, level slog.Level) *slog.Logger {
	return slog.New(minLevel{Handler: log.Handler(), level: level})
}

type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: m.Handler.WithAttrs(attrs), level: m.level}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: m.Handler.WithGroup(name), level: m.level}
}
