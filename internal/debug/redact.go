package debug

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"

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
type guard struct {
	secrets []string // values of secret-named environment variables
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
	for _, secret := range g.secrets {
		if strings.Contains(s, secret) {
			return Redacted
		}
	}
	raw, err := json.Marshal(s)
	if err != nil || boundary.Check(raw) != nil {
		return Redacted
	}
	return s
}

// figures returns a redacted copy of an actor's figures as plain JSON
// values. A value that cannot be encoded as JSON is shown as
// "(unencodable)" rather than failing the whole tree.
func (g *guard) figures(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for k, v := range in {
		if reservedKeys[k] || !keyAllowed(k) {
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
			if keyAllowed(k) {
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
// screened in the form they would be served in.
func normalize(v any) any {
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
