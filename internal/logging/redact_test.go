package logging

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wisent/singularity/internal/tools/boundary"
)

// TestRedactingHidesSecretsEverywhere: a secret is "[redacted]" in the
// message and in every kind of attribute: strings, errors, Stringers,
// other values, groups, attributes given to With and group names.
func TestRedactingHidesSecretsEverywhere(t *testing.T) {
	const key = "sk-log-key-9d1e"
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want string
	}{
		{"message", func(l *slog.Logger) { l.Info("echoed " + key) }, "echoed [redacted]"},
		{"string", func(l *slog.Logger) { l.Info("m", "k", key) }, `"k":"[redacted]"`},
		{"error", func(l *slog.Logger) { l.Info("m", "err", fmt.Errorf("call: %w", errors.New(key))) }, `"err":"call: [redacted]"`},
		{"value", func(l *slog.Logger) { l.Info("m", "list", []string{"a", key}) }, `"list":"[a [redacted]]"`},
		{"group", func(l *slog.Logger) { l.Info("m", slog.Group("g", "k", key)) }, `"g":{"k":"[redacted]"}`},
		{"with", func(l *slog.Logger) { l.With("k", key).Info("m") }, `"k":"[redacted]"`},
		{"group name", func(l *slog.Logger) { l.WithGroup(key).Info("m", "k", 1) }, `"[redacted]":{"k":1}`},
		{"encoded", func(l *slog.Logger) { l.Info("m", "k", "c2stbG9nLWtleS05ZDFl") }, `"k":"[redacted]"`},
		{"other values kept", func(l *slog.Logger) { l.Info("m", "n", 3, "list", []int{1}) }, `"n":3,"list":[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := Redacting(slog.New(slog.NewJSONHandler(&buf, nil)), boundary.NewSecrets([]byte(key)))
			tt.log(log)
			assert.Contains(t, buf.String(), tt.want)
			assert.NotContains(t, buf.String(), key)
		})
	}
	plain := slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))
	assert.Same(t, plain, Redacting(plain, nil), "no secret: the logger itself")
}
