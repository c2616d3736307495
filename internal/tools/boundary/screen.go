package boundary

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/tools/outcome"
)

// Redacted replaces every secret value in upstream text
// (docs/tools.md#the-output-boundary).
const Redacted = "[redacted]"

// Secrets is the set of secret values the runtime holds (the Brama secret
// or API key, the Most token, the secret values of MCP servers). It
// replaces each of them by Redacted in upstream text before that text
// reaches a log, the journal, the state or the model. The zero value and
// nil hold no secret. A Secrets is immutable and safe for concurrent use.
type Secrets struct {
	n     int      // how many values were given
	forms []string // every form of every value, longest first, so a secret holding another goes whole
	// bare are the forms without their backslashes, distinct and not
	// empty: a value JSON-escaped to any depth holds one of them once
	// its own backslashes are dropped (Mentioned).
	bare [][]byte
}

// NewSecrets returns the set of the given values; empty ones are dropped.
// Each value is held in all its forms (identity.Forms): as is,
// percent-encoded and in base64, each as JSON string encoders escape it
// once or twice, so a peer that echoes a secret JSON-escaped (`\/` for
// "/", \u0026 for "&") has it redacted too; the credential of an
// auth-scheme value ("Bearer <token>") is held as a secret of its own.
func NewSecrets(values ...[]byte) *Secrets {
	seen, held := map[string]bool{}, map[string]bool{}
	s := &Secrets{}
	for _, v := range values {
		if len(v) == 0 || seen[string(v)] {
			continue
		}
		seen[string(v)] = true
		s.n++
		for _, f := range identity.Forms(v) {
			if !held[string(f)] {
				held[string(f)] = true
				s.forms = append(s.forms, string(f))
			}
		}
	}
	sort.SliceStable(s.forms, func(i, j int) bool { return len(s.forms[i]) > len(s.forms[j]) })
	bare := map[string]bool{}
	for _, f := range s.forms {
		if b := withoutBackslashes([]byte(f)); len(b) > 0 && !bare[string(b)] {
			bare[string(b)] = true
			s.bare = append(s.bare, b)
		}
	}
	return s
}

// withoutBackslashes is text with every backslash dropped; text itself
// when it has none.
func withoutBackslashes(text []byte) []byte {
	if bytes.IndexByte(text, '\\') < 0 {
		return text
	}
	out := make([]byte, 0, len(text))
	for _, c := range text {
		if c != '\\' {
			out = append(out, c)
		}
	}
	return out
}

// Len is how many secret values the set holds.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// RedactString replaces every secret value in text by Redacted, in each
// of its forms. Text decoded from JSON should be redacted after decoding
// as well: a decoder reads escapes that no form lists.
func (s *Secrets) RedactString(text string) string {
	if s == nil {
		return text
	}
	for _, v := range s.forms {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, Redacted)
		}
	}
	return text
}

// Mentioned reports whether raw (JSON or any text) may hold a secret
// value in one of its forms, JSON-escaped to any depth: a JSON string
// inside a JSON document inside a JSON string, and so on. It may say
// yes of text that holds none; it never says no of text that holds one.
func (s *Secrets) Mentioned(raw []byte) bool {
	if s == nil {
		return false
	}
	for _, v := range s.forms {
		if bytes.Contains(raw, []byte(v)) {
			return true
		}
	}
	bare := withoutBackslashes(raw)
	for _, b := range s.bare {
		if bytes.Contains(bare, b) {
			return true
		}
	}
	return false
}

// RedactJSON returns the JSON document raw with every secret value
// replaced by Redacted in each of its strings (object keys, and strings
// holding JSON documents, included), member order and number literals
// kept. A document that mentions no secret is returned as it is; one
// that is not valid JSON is redacted as text.
func (s *Secrets) RedactJSON(raw []byte) []byte {
	if !s.Mentioned(raw) {
		return raw
	}
	out, err := Screen{Secrets: s}.rewriteDocument(raw, 0)
	if err != nil {
		return []byte(s.RedactString(string(raw)))
	}
	return out
}

// escaped is v as it appears inside a JSON string literal.
func escaped(v string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	out := bytes.TrimSpace(b.Bytes())
	return out[1 : len(out)-1]
}

// Screen is the output boundary of one being (docs/tools.md#the-output-boundary,
// stage 2): before the rules of Check, every secret value is replaced by
// Redacted and absolute paths inside Workspace are rewritten relative to
// it, in every string of the result (keys and text holding JSON
// included). The zero value screens with no workspace and no secrets.
type Screen struct {
	// Workspace is the being's absolute workspace; "" (or "/") rewrites
	// no path.
	Workspace string
	// Secrets are redacted; nil redacts nothing.
	Secrets *Secrets
}

// Apply screens o's content and Most ids. An accepted outcome is returned
// with its content rewritten (redacted, workspace paths relative) and an
// empty reason; a rejected one is replaced by outcome.Rejection with the
// call's own status and the reason is returned for the log only.
func (s Screen) Apply(o outcome.Outcome) (outcome.Outcome, string) {
	if o.Rejected {
		return o, ""
	}
	content, err := s.Rewrite(o.Content)
	if err == nil {
		err = Check(content)
	}
	for _, id := range []string{o.ChatID, o.MessageID} {
		if err == nil {
			err = checkText(s.text(id, 0), 1)
		}
	}
	if err != nil {
		return outcome.Rejection(o.Status), err.Error()
	}
	o.Content = content
	return o, ""
}

// Rewrite returns result with every secret value redacted and every path
// inside the workspace made relative, in all of its strings. A result
// that mentions neither is returned as it is (not re-encoded); one that is
// not valid JSON is returned as it is for Check to refuse.
func (s Screen) Rewrite(result json.RawMessage) (json.RawMessage, error) {
	if !s.touches(result) {
		return result, nil
	}
	out, err := s.rewriteDocument(result, 0)
	if err != nil {
		return result, nil // malformed: Check says so
	}
	return out, nil
}

func (s Screen) workspace() string {
	if s.Workspace == "/" {
		return ""
	}
	return strings.TrimSuffix(s.Workspace, "/")
}

func (s Screen) touches(raw []byte) bool {
	if ws := s.workspace(); ws != "" && (bytes.Contains(raw, []byte(ws)) || bytes.Contains(raw, escaped(ws))) {
		return true
	}
	return s.Secrets.Mentioned(raw)
}

// maxRewriteNesting bounds how deep text holding JSON is rewritten; deeper
// documents are too deep for Check anyway.
const maxRewriteNesting = MaxDepth + 1

// rewriteDocument re-encodes one JSON document token by token (member
// order and number literals kept), rewriting each string.
func (s Screen) rewriteDocument(data []byte, nesting int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	type frame struct {
		object bool
		n      int // tokens written in this container
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			stack = append(stack, frame{object: t == '{'})
		case string:
			if err := enc.Encode(s.text(t, nesting)); err != nil {
				return nil, err
			}
			out.Truncate(out.Len() - 1) // the encoder's newline
		case json.Number:
			out.WriteString(t.String())
		case bool:
			if t {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
	return out.Bytes(), nil
}

// text rewrites one string: secrets redacted, workspace paths relative;
// a string holding a JSON document is rewritten as a document.
func (s Screen) text(t string, nesting int) string {
	t = s.Secrets.RedactString(t)
	trimmed := strings.TrimSpace(t)
	if nesting < maxRewriteNesting && trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid([]byte(trimmed)) {
		if s.touches([]byte(trimmed)) {
			if inner, err := s.rewriteDocument([]byte(trimmed), nesting+1); err == nil {
				return string(inner)
			}
		}
		return t
	}
	return relativize(t, s.workspace())
}

// trimmedByTokens are the characters the raw path rule strips from the
// ends of a token (docs/tools.md#the-output-boundary).
const trimmedByTokens = ",;:()[]'\""

// relativize rewrites, in plain text, every token that names the
// workspace or a path inside it (optionally as a file:// URL) relative to
// the workspace: "<ws>/notes/a.txt" becomes "notes/a.txt" and "<ws>"
// itself ".". A path that merely shares the prefix ("<ws>2/x") and paths
// elsewhere are left for the raw path rule.
func relativize(t, ws string) string {
	if ws == "" || !strings.Contains(t, ws) {
		return t
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(t[i:], ws)
		if j < 0 {
			break
		}
		j += i
		start := j
		if start >= 7 && strings.EqualFold(t[start-7:start], "file://") {
			start -= 7
		}
		end := j + len(ws)
		if !tokenStart(t, start) {
			b.WriteString(t[i:end])
			i = end
			continue
		}
		switch {
		case end < len(t) && t[end] == '/':
			rest := end + 1
			b.WriteString(t[i:start])
			if rest >= len(t) || tokenEnd(t[rest]) {
				b.WriteByte('.')
			}
			i = rest
		case end == len(t) || tokenEnd(t[end]):
			b.WriteString(t[i:start])
			b.WriteByte('.')
			i = end
		default:
			b.WriteString(t[i:end])
			i = end
		}
	}
	b.WriteString(t[i:])
	return b.String()
}

func tokenStart(t string, at int) bool {
	return at == 0 || tokenEnd(t[at-1])
}

func tokenEnd(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || strings.IndexByte(trimmedByTokens, c) >= 0
}
