package debug

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/wisent/singularity/internal/tools/boundary"
)

// Redacted replaces a text value the guard refuses to serve.
const Redacted = "(redacted)"

// minSecretLen is the shortest environment value the guard looks for:
// shorter ones would match ordinary figures by accident.
const minSecretLen = 4

// guard is the redaction rule applied to everything an actor describes
// before it is served (docs/debug.md#redaction: no secret, environment
// value or path of a secret is ever served). The endpoint serves only what
// actors put in their Description; the guard is the second line of
// defence against an actor that put too much there:
//
//   - an object key (at any depth) that breaks the output boundary's key
//     rules of docs/tools.md#the-output-boundary (secret, password, token,
//     api_key, authorization, cookie, private_key, credential_path,
//     secret_path, key_path, …, and keys holding NUL, a private key block
//     or a raw path) is dropped with its value;
//   - a string value (names and statuses included) that breaks the
//     boundary's string rules (NUL, private key block, a raw local path,
//     JSON-looking text that does not pass) or that contains the value of
//     an environment variable whose name breaks the key rule (such as
//     WISENT_APP_AGENT_AUTH_SECRET) is replaced by Redacted.
//
// One guard serves one walk of the tree and remembers its verdicts on
// keys and texts: a family of thousands repeats the same figure keys and
// most of the same statuses in every node.
type guard struct {
	secrets []string // values of secret-named environment variables
	// runtime are the runtime's secret values, in all their forms
	// (HandlerConfig.Secrets); nil for none.
	runtime *boundary.Secrets

	keys  sync.Map // figure key → bool, keyAllowed's verdict
	texts sync.Map // text past plainText → the text as served (itself or Redacted)
}

// newGuard snapshots the secret-named environment variables of environ
// (as from os.Environ).
func newGuard(environ []string) *guard {
	g := &guard{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < minSecretLen {
			continue
		}
		if !keyAllowed(name) {
			g.secrets = append(g.secrets, value)
		}
	}
	return g
}

// processGuard is the guard for the current process environment.
func processGuard() *guard { return newGuard(os.Environ()) }

// text returns s, or Redacted when s may not be served.
func (g *guard) text(s string) string {
	if g.holdsSecret(s) {
		return Redacted
	}
	if plainText(s) {
		return s
	}
	if v, ok := g.texts.Load(s); ok {
		return v.(string)
	}
	out := s
	if raw, err := json.Marshal(s); err != nil || boundary.Check(raw) != nil {
		out = Redacted
	}
	g.texts.Store(s, out)
	return out
}

// holdsSecret reports whether s contains the value of a secret-named
// environment variable or one of the runtime's secrets.
func (g *guard) holdsSecret(s string) bool {
	if g.runtime.Mentioned([]byte(s)) {
		return true
	}
	for _, secret := range g.secrets {
		if strings.Contains(s, secret) {
			return true
		}
	}
	return false
}

// maxPlain bounds plainText: longer strings take the full check.
const maxPlain = 256

// plainText reports whether s is short and made only of ASCII letters,
// digits, spaces and the punctuation . _ : , + = @ # % -, with no run of
// five dashes (the start of a PEM marker). Such a string encodes as
// itself between quotes and passes every string rule of the output
// boundary (no NUL, no private key marker, no path, not a JSON document),
// so the guard serves it without encoding and checking it;
// TestPlainTextPassesTheBoundary holds it to boundary.Check.
func plainText(s string) bool {
	if len(s) > maxPlain || strings.Contains(s, "-----") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(" ._:,+=@#%-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// key reports whether a figure key may be served (keyAllowed, cached).
func (g *guard) key(k string) bool {
	if v, ok := g.keys.Load(k); ok {
		return v.(bool)
	}
	ok := keyAllowed(k) && !g.holdsSecret(k)
	g.keys.Store(k, ok)
	return ok
}

// figures returns a redacted copy of an actor's figures as plain JSON
// values. A value that cannot be encoded as JSON is shown as
// "(unencodable)" rather than failing the whole tree.
func (g *guard) figures(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if reservedKeys[k] || !g.key(k) {
			continue
		}
		out[k] = g.value(normalize(v))
	}
	return out
}

// value redacts one normalized JSON value.
func (g *guard) value(v any) any {
	switch v := v.(type) {
	case string:
		return g.text(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if g.key(k) {
				out[k] = g.value(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = g.value(e)
		}
		return out
	default:
		return v
	}
}

// keyAllowed applies the output boundary's key rules to one key.
func keyAllowed(key string) bool {
	raw, err := json.Marshal(map[string]any{key: nil})
	return err == nil && boundary.Check(raw) == nil
}

// normalize turns any Go value into plain JSON values by a round trip
// through encoding/json, so custom marshalers (money amounts, times) are
// screened in the form they would be served in. Strings, booleans, nil
// and integers (as json.Number, what the round trip gives them) need no
// trip.
func normalize(v any) any {
	switch v := v.(type) {
	case nil, bool, string, json.Number:
		return v
	case int:
		return json.Number(strconv.FormatInt(int64(v), 10))
	case int64:
		return json.Number(strconv.FormatInt(v, 10))
	case int32:
		return json.Number(strconv.FormatInt(int64(v), 10))
	case uint:
		return json.Number(strconv.FormatUint(uint64(v), 10))
	case uint64:
		return json.Number(strconv.FormatUint(v, 10))
	case uint32:
		return json.Number(strconv.FormatUint(uint64(v), 10))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "(unencodable)"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return "(unencodable)"
	}
	return out
}

// node screens n and its children again, as Collect does, now with the
// guard's secrets: a text holding one becomes Redacted, a figure key
// holding one is dropped. A guard with no secret leaves n as it is.
func (g *guard) node(n *Node) {
	if g.runtime.Len() == 0 && len(g.secrets) == 0 {
		return
	}
	if g.holdsSecret(n.PID) {
		n.PID = Redacted
	}
	n.Kind, n.Name, n.Status = g.text(n.Kind), g.text(n.Name), g.text(n.Status)
	if n.Figures != nil {
		n.Figures = g.value(n.Figures).(map[string]any)
	}
	for i := range n.Children {
		g.node(&n.Children[i])
	}
}
