package examplelas

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdinBuffer is the read buffer of the client's lines; longer lines are
// read whole all the same, in pieces.
const stdinBuffer = 64 << 10

// lineTransport is the example Las's stdio transport: one JSON-RPC
// message per line each way, as the SDK's IOTransport frames them, but
// read and decoded here. It is where the chaos surface watches the
// client's lines (intercept), and it decodes each line once, with
// encoding/json, on the SDK's own reading goroutine. IOTransport spends
// a goroutine hop and four decodes per message (a stream decoder, a
// batch probe, the message, its method), the last three each with a
// fresh 32 KiB buffer of the SDK's JSON package: most of the garbage,
// and so of the collections, of a tools/call.
//
// A line that is not a JSON-RPC message is answered with a JSON-RPC
// error and skipped, where IOTransport ends the session; batches (JSON
// arrays, allowed by 2024-11-05 only) are refused the same way.
type lineTransport struct {
	s  *server
	in io.Reader
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	return &lineConn{s: t.s, in: t.in, r: bufio.NewReaderSize(t.in, stdinBuffer)}, nil
}

type lineConn struct {
	s     *server
	in    io.Reader
	r     *bufio.Reader
	close sync.Once
}

// wireMessage is a JSON-RPC message as it arrives: ID stays raw, for the
// chaos surface's records and answers.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *jsonrpc.Error  `json:"error"`
}

// Read returns the next message for the SDK; lines the chaos surface
// swallows and lines that are not messages are skipped.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, err := c.readLine()
		if len(bytes.TrimSpace(line)) > 0 {
			if msg := c.decode(line); msg != nil {
				return msg, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine returns the next line (its newline included). The slice is
// only valid until the next read; decode copies what it keeps.
func (c *lineConn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = c.r.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// decode turns one line into the SDK's message, or nil when the line is
// swallowed or refused.
func (c *lineConn) decode(line []byte) jsonrpc.Message {
	if t := bytes.TrimSpace(line); t[0] == '[' {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported")
		return nil
	}
	var m wireMessage
	if err := json.Unmarshal(line, &m); err != nil {
		c.refuse(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())
		return nil
	}
	if c.s.intercept(m) {
		return nil
	}
	id, ok := messageID(m.ID)
	if !ok {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: bad id")
		return nil
	}
	if m.JSONRPC != "2.0" {
		c.refuse(m.ID, jsonrpc.CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
		return nil
	}
	if m.Method != nil {
		return &jsonrpc.Request{ID: id, Method: *m.Method, Params: m.Params}
	}
	if !id.IsValid() {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: neither a method nor an id")
		return nil
	}
	resp := &jsonrpc.Response{ID: id, Result: m.Result}
	if m.Error != nil {
		resp.Error = m.Error
	}
	return resp
}

// messageID converts a raw id the way the SDK does (a number or a
// string; absent or null for a notification).
func messageID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, true
	}
	var v any
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		v = s
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		v = f
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil
}

// refuse answers a line that is not a message with a JSON-RPC error; id
// is the line's own id when it has a usable one, else nil (null).
func (c *lineConn) refuse(id json.RawMessage, code int64, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	if err == nil {
		_ = c.s.out.line(b)
	}
}

// Write sends one message as one line; the SDK writes from several
// goroutines, the lockedWriter keeps lines whole.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.s.out.line(data)
}

// Close closes stdin when it can be closed, which ends a Read waiting on
// it (io.Pipe in the tests; os.Stdin at exit).
func (c *lineConn) Close() error {
	c.close.Do(func() {
		if cl, ok := c.in.(io.Closer); ok {
			_ = cl.Close()
		}
	})
	return nil
}

func (c *lineConn) SessionID() string { return "" }
