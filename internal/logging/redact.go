package logging

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/wisent/singularity/internal/tools/boundary"
)

// Redacting returns a logger whose every record has each secret of
// secrets replaced by boundary.Redacted before log's handler sees it: in
// the message and in every attribute's text (strings, errors, Stringers
// and other values as they would print), groups included, whatever
// logged them (docs/configuration.md#secret-files). With no secret it is
// log itself.
func Redacting(log *slog.Logger, secrets *boundary.Secrets) *slog.Logger {
	if secrets.Len() == 0 {
		return log
	}
	return slog.New(redacting{Handler: log.Handler(), secrets: secrets})
}

// redacting is the handler of Redacting.
type redacting struct {
	slog.Handler
	secrets *boundary.Secrets
}

func (h redacting) Handle(ctx context.Context, r slog.Record) error {
	clean := slog.NewRecord(r.Time, r.Level, h.secrets.RedactString(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		clean.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, clean)
}

func (h redacting) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return redacting{Handler: h.Handler.WithAttrs(clean), secrets: h.secrets}
}

func (h redacting) WithGroup(name string) slog.Handler {
	return redacting{Handler: h.Handler.WithGroup(h.secrets.RedactString(name)), secrets: h.secrets}
}

// attr is a with every secret redacted from its key and value. A value
// that is not text is left as it is unless its printed form holds a
// secret; it is then logged as that form, redacted.
func (h redacting) attr(a slog.Attr) slog.Attr {
	a.Key = h.secrets.RedactString(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.secrets.RedactString(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		a.Value = slog.GroupValue(clean...)
	case slog.KindAny:
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		default:
			text = fmt.Sprint(x)
		}
		if clean := h.secrets.RedactString(text); clean != text {
			a.Value = slog.StringValue(clean)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
