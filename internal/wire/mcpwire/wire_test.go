package mcpwire

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		kind   Kind
		method string
		id     string
		err    bool
	}{
		{"response", `{"jsonrpc":"2.0","id":3,"result":{}}`, KindResponse, "", "3", false},
		{"error response", `{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x"}}`, KindResponse, "", "4", false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, KindNotification, "notifications/message", "", false},
		{"notification null id", `{"jsonrpc":"2.0","id":null,"method":"n"}`, KindNotification, "n", "", false},
		{"request with our id", `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`, KindRequest, "roots/list", "1", false},
		{"request string id", `{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage"}`, KindRequest, "sampling/createMessage", `"s-1"`, false},
		{"junk", `hello world`, 0, "", "", true},
		{"array", `[1,2]`, 0, "", "", true},
		{"object without shape", `{"jsonrpc":"2.0","id":1}`, 0, "", "", true},
		{"broken json", `{"jsonrpc":`, 0, "", "", true},
		{"surrounding space", "  {\"id\":1,\"result\":null} \r", KindResponse, "", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Classify([]byte(tt.line))
			if tt.err {
				require.ErrorIs(t, err, ErrNotJSONRPC)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.kind, m.Kind)
			assert.Equal(t, tt.method, m.Method)
			assert.Equal(t, tt.id, string(m.ID))
		})
	}
}

func TestIntID(t *testing.T) {
	for raw, want := range map[string]bool{"7": true, `"7"`: false, "": false, "1.5": false} {
		_, ok := Message{ID: json.RawMessage(raw)}.IntID()
		assert.Equal(t, want, ok, raw)
	}
}

func TestEncoding(t *testing.T) {
	b, err := Request(5, MethodInitialize, NewInitializeParams("1.0", "ada"))
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"singularity","version":"1.0"},"agentId":"ada"}}`+"\n", string(b))

	b, err = Notification(MethodInitialized, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", string(b))

	assert.Equal(t, `{"jsonrpc":"2.0","id":"s-1","error":{"code":-32601,"message":"method not found: roots/list"}}`+"\n",
		string(MethodNotFound(json.RawMessage(`"s-1"`), "roots/list")))
}

func TestCheckInitialize(t *testing.T) {
	require.NoError(t, CheckInitialize(json.RawMessage(`{"protocolVersion":"2024-11-05"}`)))
	for _, bad := range []string{`{"protocolVersion":"2025-06-18"}`, `{}`, `[]`} {
		assert.ErrorIs(t, CheckInitialize(json.RawMessage(bad)), ErrUnsupportedVersion, bad)
	}
}

func TestParseToolsPage(t *testing.T) {
	page, err := ParseToolsPage(json.RawMessage(`{"tools":[{"name":"a__x","description":"X","inputSchema":{"type":"object"}},{"name":"b__y"}],"nextCursor":"c2"}`))
	require.NoError(t, err)
	require.Len(t, page.Tools, 2)
	assert.Equal(t, "a__x", page.Tools[0].Function.Name)
	assert.JSONEq(t, `{"type":"object"}`, string(page.Tools[0].Function.Parameters))
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(page.Tools[1].Function.Parameters))
	assert.Equal(t, "function", page.Tools[1].Type)
	assert.Equal(t, "c2", page.NextCursor)
}

func TestCallOutcome(t *testing.T) {
	tests := []struct {
		name   string
		msg    Message
		status string
		code   string
	}{
		{"success", Message{Result: json.RawMessage(`{"content":[]}`)}, outcome.Success, ""},
		{"isError false", Message{Result: json.RawMessage(`{"content":[],"isError":false}`)}, outcome.Success, ""},
		{"failed", Message{Result: json.RawMessage(`{"content":[],"isError":true}`)}, outcome.Failed, "remote_tool"},
		{"rpc error", Message{Error: &RPCError{Code: -32000, Message: "boom"}}, outcome.Indeterminate, "mcp"},
		{"malformed", Message{Result: json.RawMessage(`"text"`)}, outcome.Indeterminate, "mcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CallOutcome(tt.msg)
			assert.Equal(t, tt.status, o.Status)
			assert.Equal(t, tt.code, o.ErrorCode)
		})
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "a\n\nb\r\n" + long + "\n" + strings.Repeat("y", 101) + "\nlast"
	r := NewLineReader(strings.NewReader(in), 100)
	// The tiny bufio minimum (16 bytes) does not apply: 64 KiB buffer, so
	// also check a line longer than the buffer below.
	for _, want := range []string{"a", "", "b", long} {
		line, err := r.ReadLine()
		require.NoError(t, err)
		assert.Equal(t, want, string(line))
	}
	_, err := r.ReadLine()
	require.ErrorIs(t, err, ErrLineTooLong)
}

func TestLineReaderBeyondBuffer(t *testing.T) {
	big := strings.Repeat("z", 200<<10) // larger than the 64 KiB buffer
	r := NewLineReader(strings.NewReader(big+"\n"+big+"z\nend"), 200<<10)
	line, err := r.ReadLine()
	require.NoError(t, err)
	assert.Len(t, line, 200<<10)
	_, err = r.ReadLine()
	require.ErrorIs(t, err, ErrLineTooLong)

	r = NewLineReader(strings.NewReader("tail"), 0)
	line, err = r.ReadLine()
	require.NoError(t, err)
	assert.Equal(t, "tail", string(line))
	_, err = r.ReadLine()
	assert.True(t, errors.Is(err, io.EOF))
}

func BenchmarkClassify(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Classify(line); err != nil {
			b.Fatal(err)
		}
	}
}
