package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzClassify checks Classify against docs/las.md#framing-robustness read
// independently (the line decoded as a plain JSON object, keys looked up
// exactly): a method makes a notification (no id, or a null one) or a
// request (any other id), no method but a result or an error makes a
// response, and anything else is ErrNotJSONRPC. It also checks that the
// classification is stable: re-encoding an accepted message, by hand and
// through Request, Notification and MethodNotFound, classifies the same
// way with the same fields.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"x","data":{"k":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":null,"method":"n"}`,
		`{"jsonrpc":"2.0","id":1,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":1.5,"result":null}`,
		`{"jsonrpc":"2.0","id":[1, 2],"method":"x"}`,
		`{"jsonrpc":"2.0","id":"<&>","method":"ping"}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":null}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"error":"boom"}`,
		`{"id":1,"result":{},"method":"m","method":"n"}`,
		`{"Method":"x","id":1}`,
		"  {\"id\":1,\"result\":null} \r",
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":`, `hello world`, `[1,2]`, `null`, ``, `   `, "\x00", `{}`, `{"method":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Classify(line)
		if err != nil {
			if !errors.Is(err, ErrNotJSONRPC) {
				t.Fatalf("Classify(%q): %v is not ErrNotJSONRPC", line, err)
			}
			if !reflect.DeepEqual(m, Message{}) {
				t.Fatalf("Classify(%q) failed but returned %+v", line, m)
			}
		} else if IsBlank(line) {
			t.Fatalf("blank line %q classified as %v", line, m.Kind)
		}
		checkShape(t, line, m, err)
		if err != nil {
			return
		}
		checkFields(t, line, m)
		checkReencoded(t, line, m)
	})
}

// knownKeys are the members Classify reads.
var knownKeys = []string{"id", "method", "params", "result", "error"}

// checkShape compares Classify's verdict with the shape of the line read as
// a JSON object with exact keys. encoding/json matches keys without regard
// to case, so a line with a case variant of a known member ("Method") is
// left out of this comparison.
func checkShape(t *testing.T, line []byte, m Message, err error) {
	t.Helper()
	trimmed := bytes.TrimSpace(line)
	var obj map[string]json.RawMessage
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &obj) != nil || obj == nil {
		if err == nil {
			t.Fatalf("Classify(%q) accepted a line that is not a JSON object", line)
		}
		return
	}
	for k := range obj {
		for _, known := range knownKeys {
			if k != known && strings.EqualFold(k, known) {
				return
			}
		}
	}
	present := func(k string) bool {
		v, ok := obj[k]
		return ok && !bytes.Equal(v, []byte("null"))
	}
	var want Kind
	switch _, hasResult := obj["result"]; {
	case present("method") && present("id"):
		want = KindRequest
	case present("method"):
		want = KindNotification
	case hasResult || present("error"):
		want = KindResponse
	}
	if err == nil {
		if m.Kind != want {
			t.Fatalf("Classify(%q) = %v, shape says %v", line, m.Kind, want)
		}
		return
	}
	if want != 0 {
		// The shape is right, so a member must have the wrong type: a
		// method that is not a string or an error that is not an object.
		var typed struct {
			Method *string   `json:"method"`
			Error  *RPCError `json:"error"`
		}
		if json.Unmarshal(trimmed, &typed) == nil {
			t.Fatalf("Classify(%q) refused a well-typed %v: %v", line, want, err)
		}
	}
}

// checkFields asserts the invariants of an accepted message.
func checkFields(t *testing.T, line []byte, m Message) {
	t.Helper()
	if m.Kind.String() == "invalid" {
		t.Fatalf("Classify(%q) returned kind %d", line, m.Kind)
	}
	if bytes.Equal(m.ID, []byte("null")) {
		t.Fatalf("Classify(%q) kept a null id", line)
	}
	for _, raw := range []json.RawMessage{m.ID, m.Params, m.Result} {
		if raw != nil && !json.Valid(raw) {
			t.Fatalf("Classify(%q) returned invalid raw JSON %q", line, raw)
		}
	}
	switch m.Kind {
	case KindResponse:
		if m.Method != "" || m.Params != nil || (m.Result == nil && m.Error == nil) {
			t.Fatalf("Classify(%q): malformed response %+v", line, m)
		}
	case KindNotification:
		if m.ID != nil || m.Result != nil || m.Error != nil {
			t.Fatalf("Classify(%q): malformed notification %+v", line, m)
		}
	case KindRequest:
		if m.ID == nil || m.Result != nil || m.Error != nil {
			t.Fatalf("Classify(%q): malformed request %+v", line, m)
		}
	}
	if n, ok := m.IntID(); ok {
		var v json.Number
		if json.Unmarshal(m.ID, &v) != nil || v.String() != string(bytes.TrimSpace(m.ID)) {
			t.Fatalf("IntID %d from non-number id %q", n, m.ID)
		}
	}
}

// checkReencoded re-encodes m and classifies it again.
func checkReencoded(t *testing.T, line []byte, m Message) {
	t.Helper()
	doc := map[string]any{"jsonrpc": "2.0"}
	if m.ID != nil {
		doc["id"] = m.ID
	}
	if m.Kind != KindResponse {
		doc["method"] = m.Method
	}
	for k, raw := range map[string]json.RawMessage{"params": m.Params, "result": m.Result} {
		if raw != nil {
			doc[k] = raw
		}
	}
	if m.Error != nil {
		doc["error"] = m.Error
	}
	again, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", m, err)
	}
	requireSame(t, line, again, m)

	var params any
	if m.Params != nil {
		params = m.Params
	}
	switch m.Kind {
	case KindNotification:
		b, err := Notification(m.Method, params)
		if err != nil {
			t.Fatalf("Notification(%q): %v", m.Method, err)
		}
		requireSame(t, line, b, m)
	case KindRequest:
		if id, ok := m.IntID(); ok {
			b, err := Request(id, m.Method, params)
			if err != nil {
				t.Fatalf("Request(%d, %q): %v", id, m.Method, err)
			}
			requireSame(t, line, b, m)
		}
		// Our answer to a request from Las is a response to its id.
		answer := MethodNotFound(m.ID, m.Method)
		r, err := Classify(answer)
		if err != nil || r.Kind != KindResponse || r.Error == nil || r.Error.Code != CodeMethodNotFound ||
			r.Result != nil || !sameJSON(r.ID, m.ID) {
			t.Fatalf("answer %q to %q classifies as %+v, %v", answer, line, r, err)
		}
		if !bytes.HasSuffix(answer, []byte("\n")) || bytes.Count(answer, []byte("\n")) != 1 {
			t.Fatalf("answer %q is not one framed line", answer)
		}
	}
}

// requireSame classifies the re-encoded line b and compares it with m.
func requireSame(t *testing.T, line, b []byte, m Message) {
	t.Helper()
	if bytes.Count(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) != 0 {
		t.Fatalf("re-encoding of %q spans lines: %q", line, b)
	}
	r, err := Classify(b)
	if err != nil {
		t.Fatalf("re-encoding %q of %q: %v", b, line, err)
	}
	if r.Kind != m.Kind || r.Method != m.Method || !sameJSON(r.ID, m.ID) ||
		!sameJSON(r.Params, m.Params) || !sameJSON(r.Result, m.Result) || !sameError(r.Error, m.Error) {
		t.Fatalf("re-encoding %q of %q classifies as %+v, was %+v", b, line, r, m)
	}
}

// sameJSON reports whether a and b are both absent or the same JSON value
// (the encoder compacts and escapes, so bytes may differ).
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, oka := decodeNumbers(a)
	vb, okb := decodeNumbers(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

func decodeNumbers(raw json.RawMessage) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}

func sameError(a, b *RPCError) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Code == b.Code && a.Message == b.Message && sameJSON(a.Data, b.Data)
}
