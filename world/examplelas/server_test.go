package examplelas

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// session runs the server in-process over pipes and exchanges raw lines.
type session struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

func open(t *testing.T, cfg Config) *session {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg, inR, outW); _ = outW.Close() }()
	t.Cleanup(func() {
		_ = inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		require.NoError(t, <-done)
	})
	return &session{in: inW, out: bufio.NewReader(outR)}
}

func (s *session) roundTrip(t *testing.T, line string) map[string]any {
	t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(t, err)
	for {
		text, err := s.out.ReadString('\n')
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &m))
		if _, isResponse := m["id"]; isResponse && m["method"] == nil {
			return m
		}
	}
}

func TestNegotiatesTheRequestedLegacyVersion(t *testing.T) {
	s := open(t, Config{})
	init := s.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"},"agentId":"a"}}`)
	assert.Equal(t, "2024-11-05", init["result"].(map[string]any)["protocolVersion"])
	_, err := io.WriteString(s.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)

	sale := s.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"finance__finance_sell_report","arguments":{"item":"tea","units":2}}}`)
	structured := sale["result"].(map[string]any)["structuredContent"].(map[string]any)
	assert.Equal(t, "0.10", structured["revenue_usd"])
	assert.Equal(t, true, structured["simulated"])

	summary := s.roundTrip(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"finance__finance_sales_summary","arguments":{}}}`)
	assert.Equal(t, "0.10", summary["result"].(map[string]any)["structuredContent"].(map[string]any)["total_usd"])
}

func TestFakeProtocolVersion(t *testing.T) {
	s := open(t, Config{ProtocolVersion: "2025-06-18"})
	init := s.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	assert.Equal(t, "2025-06-18", init["result"].(map[string]any)["protocolVersion"])
}

func TestUSD(t *testing.T) {
	for cents, want := range map[int]string{0: "0.00", 5: "0.05", 150: "1.50", 100005: "1000.05"} {
		assert.Equal(t, want, usd(cents))
	}
}

// TestBadLinesAreAnsweredAndSkipped: a line that is not a JSON-RPC
// message gets a JSON-RPC error and the session goes on.
func TestBadLinesAreAnsweredAndSkipped(t *testing.T) {
	s := open(t, Config{})
	s.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	for _, tt := range []struct {
		line string
		id   any
		code float64
	}{
		{`this is not JSON`, nil, -32700},
		{`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, nil, -32600},
		{`{"jsonrpc":"1.0","id":8,"method":"ping"}`, float64(8), -32600},
		{`{"jsonrpc":"2.0","id":{"no":1},"method":"ping"}`, nil, -32600},
		{`{"jsonrpc":"2.0"}`, nil, -32600},
	} {
		t.Run(tt.line, func(t *testing.T) {
			got := s.roundTrip(t, tt.line)
			assert.Equal(t, tt.id, got["id"])
			assert.Equal(t, tt.code, got["error"].(map[string]any)["code"])
		})
	}
	pong := s.roundTrip(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	assert.Equal(t, "p", pong["id"])
	assert.Equal(t, map[string]any{}, pong["result"])
}

// TestLongLinesAreReadWhole: a line longer than the read buffer arrives
// whole.
func TestLongLinesAreReadWhole(t *testing.T) {
	s := open(t, Config{})
	s.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	msg := strings.Repeat("x", 3*stdinBuffer)
	echo := s.roundTrip(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo__echo","arguments":{"message":"`+msg+`"}}}`)
	assert.Equal(t, msg, echo["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
}
