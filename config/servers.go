package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/tools/boundary"
)

// Server is one entry of LAS_SERVERS_FILE (docs/las.md#several-mcp-servers):
// a stdio server (Command, Args, Env, Dir) or a remote one (URL,
// Headers), named by its key in "mcpServers". The name is its surface:
// its tools are offered as "<name>__<tool>".
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     []Setting // sorted by name
	Dir     string    // "" runs in the runtime's working directory
	URL     string
	Headers []Setting // sorted by name
}

// Remote reports whether the server is reached over streamable HTTP.
func (s Server) Remote() bool { return s.URL != "" }

// Setting is one env variable or header of a server. Exactly one of
// Value and Secret is set: Secret when the file gave {"file": path}.
type Setting struct {
	Name   string
	Value  string
	Secret identity.Secret
}

// Reveal returns the setting's value, read from its secret when it has one.
func (s Setting) Reveal() string {
	if s.Secret.IsSet() {
		return string(s.Secret.Reveal())
	}
	return s.Value
}

// serversError is the sentence of a refused servers file:
// "configuration: LAS_SERVERS_FILE: <reason>".
func serversError(format string, args ...any) error {
	return configError("LAS_SERVERS_FILE: "+format, args...)
}

// LoadServers reads and validates a servers file in the "mcpServers"
// format of Claude Desktop, Cursor, VS Code and cagent. Servers come back
// in file order. Values {"file": "<absolute path>"} are read as secret
// files (their refusals are the "secret file: …" sentences, exit 2).
func LoadServers(path string) ([]Server, error) {
	data, err := readFile(path, MaxServersFileBytes)
	if err != nil {
		return nil, serversError("%w", err)
	}
	var doc struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, serversError("not a JSON object: %s", jsonReason(err))
	}
	raw := bytes.TrimSpace(doc.MCPServers)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, serversError(`"mcpServers" must be an object`)
	}
	names, entries, err := orderedObject(raw)
	if err != nil {
		return nil, serversError(`"mcpServers": %s`, jsonReason(err))
	}
	servers := make([]Server, 0, len(names))
	seen := map[string]bool{}
	for i, name := range names {
		if seen[name] {
			return nil, serversError("server %q is named twice", name)
		}
		seen[name] = true
		s, err := loadServer(name, entries[i])
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// entry is one server as the file writes it. "type" is accepted as VS
// Code and cagent write it ("stdio", "http", "streamable-http").
type entry struct {
	Type    string                     `json:"type"`
	Command *string                    `json:"command"`
	Args    []string                   `json:"args"`
	Env     map[string]json.RawMessage `json:"env"`
	Cwd     string                     `json:"cwd"`
	URL     *string                    `json:"url"`
	Headers map[string]json.RawMessage `json:"headers"`
}

// entryKeys are the keys an entry may have: those of entry. Any other
// is refused, so that a key the runtime does not implement ("disabled",
// "transport", a misspelt "agrs") is not silently ignored.
var entryKeys = map[string]bool{
	"type": true, "command": true, "args": true, "env": true, "cwd": true,
	"url": true, "headers": true,
}

func loadServer(name string, raw json.RawMessage) (Server, error) {
	if !validServerName(name) {
		return Server{}, serversError("server name %q must be ASCII letters, digits, _ or - without __", name)
	}
	keys, _, err := orderedMembers(raw)
	if err != nil {
		return Server{}, serversError("server %q: %s", name, jsonReason(err))
	}
	for _, k := range keys {
		if !entryKeys[k] {
			return Server{}, serversError("server %q: unknown key %q", name, k)
		}
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return Server{}, serversError("server %q: %s", name, jsonReason(err))
	}
	s := Server{Name: name}
	switch {
	case e.Command != nil && e.URL != nil:
		return Server{}, serversError(`server %q has both "command" and "url"`, name)
	case e.Command != nil:
		if strings.TrimSpace(*e.Command) == "" {
			return Server{}, serversError(`server %q: "command" must not be empty`, name)
		}
		if e.Type != "" && e.Type != "stdio" {
			return Server{}, serversError(`server %q: type %q needs a "url"`, name, e.Type)
		}
		if len(e.Headers) > 0 {
			return Server{}, serversError(`server %q: "headers" belong to a "url" server`, name)
		}
		if e.Cwd != "" && !hasPlaceholder(e.Cwd) {
			if err := checkDir(name, e.Cwd); err != nil {
				return Server{}, err
			}
		}
		s.Command, s.Args, s.Dir = *e.Command, e.Args, e.Cwd
		if s.Env, err = settings(name, "env", e.Env); err != nil {
			return Server{}, err
		}
		if err := checkPlaceholders(s); err != nil {
			return Server{}, err
		}
	case e.URL != nil:
		switch e.Type {
		case "", "http", "streamable-http", "streamableHttp":
		default:
			return Server{}, serversError(`server %q: transport %q is not supported (streamable HTTP only)`, name, e.Type)
		}
		u, err := url.Parse(*e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Server{}, serversError(`server %q: "url" must be an http or https URL`, name)
		}
		if len(e.Env) > 0 || len(e.Args) > 0 || e.Cwd != "" {
			return Server{}, serversError(`server %q: "env", "args" and "cwd" belong to a "command" server`, name)
		}
		s.URL = *e.URL
		if s.Headers, err = settings(name, "header", e.Headers); err != nil {
			return Server{}, err
		}
	default:
		return Server{}, serversError(`server %q needs a "command" or a "url"`, name)
	}
	return s, nil
}

// checkPlaceholders refuses a ${SINGULARITY_…} in the command, args,
// env values or cwd of s that names no per-being value.
func checkPlaceholders(s Server) error {
	texts := append([]string{s.Command, s.Dir}, s.Args...)
	for _, e := range s.Env {
		texts = append(texts, e.Value)
	}
	for _, t := range texts {
		if p := unknownPlaceholder(t); p != "" {
			return serversError("server %q: %s is no per-being value (%s, %s or %s)", s.Name, p, "${"+BeingDirVar+"}", "${"+BeingIDVar+"}", "${"+WorkspaceVar+"}")
		}
	}
	return nil
}

// checkDir refuses a cwd that is not an existing directory, at
// configuration time rather than as the failure of the server's spawn
// (a cwd naming a per-being value is checked by the spawn).
// A relative dir is taken from the runtime's working directory, as the
// spawn takes it.
func checkDir(server, dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return serversError("server %q: cwd %s does not exist", server, dir)
	case err != nil:
		return serversError("server %q: cwd %s: %w", server, dir, osError{err})
	case !info.IsDir():
		return serversError("server %q: cwd %s is not a directory", server, dir)
	}
	return nil
}

// settings reads env variables or headers: each a string or
// {"file": "<absolute path>"} read as a secret file.
func settings(server, what string, raw map[string]json.RawMessage) ([]Setting, error) {
	out := make([]Setting, 0, len(raw))
	for name, v := range raw {
		if name == "" || strings.ContainsAny(name, "=\x00\r\n") {
			return nil, serversError("server %q: %s name %q is invalid", server, what, name)
		}
		var text string
		if json.Unmarshal(v, &text) == nil {
			if strings.ContainsAny(text, "\x00\r\n") {
				return nil, serversError("server %q: %s %q must be one line without NUL", server, what, name)
			}
			out = append(out, Setting{Name: name, Value: text})
			continue
		}
		var ref struct {
			File *string `json:"file"`
		}
		if json.Unmarshal(v, &ref) != nil || ref.File == nil || !filepath.IsAbs(*ref.File) {
			return nil, serversError(`server %q: %s %q must be a string or {"file": "<absolute path>"}`, server, what, name)
		}
		secret, err := ReadSecretFile(*ref.File)
		if err != nil {
			return nil, err
		}
		out = append(out, Setting{Name: name, Secret: secret})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// validServerName is the tool-name rule (docs/tools.md#the-catalogue)
// without "__", which separates the server from its tool.
func validServerName(name string) bool {
	if name == "" || len(name) > 64 || strings.Contains(name, "__") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// orderedObject returns the members of the "mcpServers" object in
// document order; each must be an object.
func orderedObject(raw []byte) ([]string, []json.RawMessage, error) {
	names, values, err := orderedMembers(raw)
	if err != nil {
		return nil, nil, err
	}
	for i, v := range values {
		if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
			return nil, nil, fmt.Errorf("server %q must be an object", names[i])
		}
	}
	return names, values, nil
}

// orderedMembers returns the members of a JSON object in document
// order, repeated names included.
func orderedMembers(raw []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, nil, err
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("object key expected")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names = append(names, name)
		values = append(values, v)
	}
	return names, values, nil
}

// jsonReason is a decoding error without the library's "json: " prefix.
func jsonReason(err error) string { return strings.TrimPrefix(err.Error(), "json: ") }

// inlineSecretLen is the length from which an inline env or header value
// is a secret whatever its name (docs/las.md#several-mcp-servers).
const inlineSecretLen = 8

// secretsOf returns every secret value of the servers, for redaction: the
// values read from secret files, and the inline values that are secret
// by IsSecretSetting.
func secretsOf(servers []Server) []identity.Secret {
	var out []identity.Secret
	for _, s := range servers {
		for _, list := range [][]Setting{s.Env, s.Headers} {
			for _, set := range list {
				switch {
				case set.Secret.IsSet():
					out = append(out, set.Secret)
				case IsSecretSetting(set.Name, set.Value):
					out = append(out, identity.NewSecret([]byte(set.Value)))
				}
			}
		}
	}
	return out
}

// IsSecretSetting reports whether an inline env or header value of a
// servers file is redacted like a secret: a non-empty value whose name
// breaks the output boundary's forbidden-key rule (API_KEY, GITHUB_TOKEN,
// Authorization), or any value of at least eight bytes, since a
// credential may sit under any name. Shorter values under other names
// ("1", "true", "debug") are not: redacting them would blank every such
// word of every tool result.
func IsSecretSetting(name, value string) bool {
	if value == "" {
		return false
	}
	return boundary.ForbiddenKey(name) || len(value) >= inlineSecretLen
}
