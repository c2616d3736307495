package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFormatsAndLevels(t *testing.T) {
	cases := []struct {
		format, level string
		check         func(t *testing.T, out string)
	}{
		{"json", "info", func(t *testing.T, out string) {
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &line))
			assert.Equal(t, "hello", line["msg"])
			assert.Equal(t, "Ada", line["being"])
		}},
		{"text", "info", func(t *testing.T, out string) { assert.Contains(t, out, "msg=hello being=Ada") }},
		{"auto", "info", func(t *testing.T, out string) { assert.Contains(t, out, "msg=hello") }},
		{"text", "error", func(t *testing.T, out string) { assert.Empty(t, out) }},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.level, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(&buf, c.level, c.format)
			require.NoError(t, err)
			log.Info("hello", "being", "Ada")
			c.check(t, buf.String())
		})
	}
}

func TestRejectsUnknown(t *testing.T) {
	_, err := New(&bytes.Buffer{}, "loud", "text")
	assert.Error(t, err)
	_, err = New(&bytes.Buffer{}, "info", "xml")
	assert.Error(t, err)
}

func TestAtLeastFiltersBelowLevel(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "debug", "text")
	require.NoError(t, err)
	quiet := AtLeast(log.With("lib", "x"), slog.LevelWarn)
	quiet.Info("chatter")
	quiet.Warn("matters")
	assert.NotContains(t, buf.String(), "chatter")
	assert.Contains(t, buf.String(), "msg=matters lib=x")
}
