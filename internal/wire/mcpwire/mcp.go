package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
)

// MCP method names the client uses.
const (
	MethodInitialize       = "initialize"
	MethodInitialized      = "notifications/initialized"
	MethodToolsList        = "tools/list"
	MethodToolsCall        = "tools/call"
	MethodPing             = "ping"
	MethodCancelled        = "notifications/cancelled"
	MethodToolsListChanged = "notifications/tools/list_changed"
)

// DefaultInputSchema is the schema given to a tool that declares none
// (docs/las.md#handshake).
var DefaultInputSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// ClientInfo names the client in the initialize request.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams are the parameters of the initialize request:
// protocol version 2024-11-05, no capabilities, our client info and the
// being's agent id.
type InitializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      ClientInfo      `json:"clientInfo"`
	AgentID         string          `json:"agentId"`
}

// NewInitializeParams returns the initialize parameters of
// docs/las.md#handshake.
func NewInitializeParams(clientVersion, agentID string) InitializeParams {
	return InitializeParams{
		ProtocolVersion: ProtocolVersion,
		Capabilities:    json.RawMessage(`{}`),
		ClientInfo:      ClientInfo{Name: "singularity", Version: clientVersion},
		AgentID:         agentID,
	}
}

// WithRoots declares the roots capability (docs/las.md#several-mcp-servers):
// the client answers roots/list, and its roots never change.
func (p InitializeParams) WithRoots() InitializeParams {
	p.Capabilities = json.RawMessage(`{"roots":{"listChanged":false}}`)
	return p
}

// MethodRootsList is the server's request for the client's roots.
const MethodRootsList = "roots/list"

// RootsAnswer returns the framed answer to a roots/list request with id:
// one root, the directory dir as a file:// URI named name.
func RootsAnswer(id json.RawMessage, dir, name string) []byte {
	type root struct {
		URI  string `json:"uri"`
		Name string `json:"name"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  struct {
			Roots []root `json:"roots"`
		} `json:"result"`
	}{JSONRPC: "2.0", ID: id, Result: struct {
		Roots []root `json:"roots"`
	}{Roots: []root{{URI: FileURI(dir), Name: name}}}})
	return append(b, '\n')
}

// FileURI is the file:// URI of an absolute directory.
func FileURI(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

// ErrUnsupportedVersion reports an initialize answer with a protocol
// version other than ProtocolVersion.
var ErrUnsupportedVersion = errors.New("unsupported MCP version")

// CheckInitialize reads an initialize result and accepts it only when it
// negotiated ProtocolVersion.
func CheckInitialize(result json.RawMessage) error {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("%w: %q", ErrUnsupportedVersion, r.ProtocolVersion)
	}
	return nil
}

// ListParams are the parameters of one tools/list page request.
type ListParams struct {
	Cursor string `json:"cursor,omitempty"`
}

// ToolsPage is one decoded tools/list answer: its tools in Las order as
// catalogue entries, and the cursor of the next page ("" when done).
type ToolsPage struct {
	Tools      []chat.Tool
	NextCursor string
}

// ParseToolsPage decodes a tools/list result. A tool without an
// inputSchema gets DefaultInputSchema; the schema is otherwise kept as Las
// sent it (the catalogue decides whether it is acceptable).
func ParseToolsPage(result json.RawMessage) (ToolsPage, error) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return ToolsPage{}, fmt.Errorf("decode tools/list result: %w", err)
	}
	page := ToolsPage{Tools: make([]chat.Tool, 0, len(r.Tools)), NextCursor: r.NextCursor}
	for _, t := range r.Tools {
		schema := t.InputSchema
		if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
			schema = DefaultInputSchema
		}
		page.Tools = append(page.Tools, chat.NewTool(t.Name, t.Description, schema))
	}
	return page, nil
}

// CallParams are the parameters of tools/call.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// CancelledParams are the parameters of notifications/cancelled.
type CancelledParams struct {
	RequestID int64  `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
}

// Error codes of Las outcomes (docs/las.md#calls-and-deadlines).
const (
	ErrorCodeRemoteTool = "remote_tool"
	ErrorCodeMCP        = "mcp"
)

// ErrorOutcome is the outcome of a tools/call answered with a JSON-RPC
// error object of code and message, whatever the transport: the server
// answered, so the session is sound, but the remote effect is unknown
// (docs/las.md#calls-and-deadlines).
func ErrorOutcome(code int, message string) outcome.Outcome {
	return outcome.Unknown(ErrorCodeMCP, fmt.Sprintf("Las answered with JSON-RPC error %d: %s", code, message))
}

// CallOutcome classifies a tools/call answer. A result without isError
// true is a success carrying the whole result object; with it the call
// failed (remote_tool) and the result is still shown. A JSON-RPC error
// object leaves the remote effect unknown: indeterminate (mcp).
func CallOutcome(m Message) outcome.Outcome {
	if m.Error != nil {
		return ErrorOutcome(m.Error.Code, m.Error.Message)
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return outcome.Unknown(ErrorCodeMCP, "Las answered with a malformed tools/call result")
	}
	if r.IsError {
		return outcome.Outcome{Status: outcome.Failed, ErrorCode: ErrorCodeRemoteTool, Content: m.Result}
	}
	return outcome.Succeeded(m.Result)
}
