// Package mcpwire is the pure wire layer of the Las MCP client: JSON-RPC 2.0
// messages framed one per line (docs/las.md#framing-robustness), classified
// by their shape, and the few MCP payloads the client builds and reads
// (initialize, tools/list, tools/call). It does no I/O beyond reading lines
// from an io.Reader and never logs; the Las actor drives it.
package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ProtocolVersion is the MCP revision the client asks for and the only one
// it accepts back (docs/las.md#handshake).
const ProtocolVersion = "2024-11-05"

// JSON-RPC error codes the client sends.
const (
	CodeMethodNotFound = -32601
)

// Kind is the shape of one message from Las.
type Kind int

// The shapes of docs/las.md#framing-robustness. A message with a method is a
// notification (no id) or a request to us (with an id); without a method it
// is a response.
const (
	KindResponse Kind = iota + 1
	KindNotification
	KindRequest
)

func (k Kind) String() string {
	switch k {
	case KindResponse:
		return "response"
	case KindNotification:
		return "notification"
	case KindRequest:
		return "request"
	default:
		return "invalid"
	}
}

// ErrNotJSONRPC reports a line that is not a JSON-RPC message: not JSON,
// not an object, or an object with neither a method nor a result or error.
var ErrNotJSONRPC = errors.New("not a JSON-RPC message")

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// Message is one classified line. ID is the raw id as Las sent it (nil for
// notifications); Result and Params are raw JSON.
type Message struct {
	Kind   Kind
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

// IntID returns the id as an integer when it is one; our own requests
// always carry integer ids, so a response whose id is not an integer
// cannot be ours.
func (m Message) IntID() (int64, bool) {
	if len(m.ID) == 0 || m.ID[0] == '"' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(m.ID), 10, 64)
	return n, err == nil
}

type rawMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// IsBlank reports whether a line holds only whitespace; such lines are
// skipped silently.
func IsBlank(line []byte) bool { return len(bytes.TrimSpace(line)) == 0 }

// Classify parses one line and decides its shape by its fields, never by
// its id: a method makes it a notification or a request, otherwise it is a
// response and must carry a result or an error. Anything else is
// ErrNotJSONRPC.
func Classify(line []byte) (Message, error) {
	var raw rawMessage
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, ErrNotJSONRPC
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrNotJSONRPC, err)
	}
	id := raw.ID
	if bytes.Equal(id, []byte("null")) {
		id = nil
	}
	if raw.Method != nil {
		m := Message{Kind: KindNotification, Method: *raw.Method, Params: raw.Params}
		if id != nil {
			m.Kind, m.ID = KindRequest, id
		}
		return m, nil
	}
	if raw.Result == nil && raw.Error == nil {
		return Message{}, ErrNotJSONRPC
	}
	return Message{Kind: KindResponse, ID: id, Result: raw.Result, Error: raw.Error}, nil
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   RPCError        `json:"error"`
}

// Request returns one framed request line (with its trailing newline).
func Request(id int64, method string, params any) ([]byte, error) {
	b, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", method, err)
	}
	return append(b, '\n'), nil
}

// Notification returns one framed notification line.
func Notification(method string, params any) ([]byte, error) {
	b, err := json.Marshal(notification{JSONRPC: "2.0", Method: method, Params: params})
	if err != nil {
		return nil, fmt.Errorf("encode %s notification: %w", method, err)
	}
	return append(b, '\n'), nil
}

// MethodNotFound returns the framed answer to a request from Las: a
// JSON-RPC error -32601 carrying the request's own id.
func MethodNotFound(id json.RawMessage, method string) []byte {
	b, _ := json.Marshal(errorResponse{
		JSONRPC: "2.0",
		ID:      id,
		Error:   RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method},
	})
	return append(b, '\n')
}
