package debug

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// StatusUnresponsive is the status of a node whose actor did not describe
// itself before the deadline, or is gone.
const StatusUnresponsive = "unresponsive"

// Node is one actor in the collected tree. Its JSON form is the node of
// docs/debug.md#the-tree: {"pid", "kind", "name", "status", <figures...>,
// "children"}, with the figures flattened into the object in key order and
// children always an array.
//
// Figures hold only JSON values (map[string]any, []any, string,
// json.Number, bool, nil) that passed the redaction guard; Collect is the
// only producer.
type Node struct {
	PID      string         // the actor's id, a path such as "family/being-ada/las"
	Kind     string         // "family", "brama", "being", "ledger", "las"; empty when unknown
	Name     string         // the actor's own name; empty when unknown
	Status   string         // as the actor reported it, or StatusUnresponsive
	Figures  map[string]any // kind-specific figures, already redacted
	Children []Node         // in the order the parent listed them
}

// reservedKeys are the node's own keys; a figure may not shadow them.
var reservedKeys = map[string]bool{
	"pid": true, "kind": true, "name": true, "status": true, "children": true,
}

// MarshalJSON writes the node with its own keys first, then the figures
// in key order, then the children, so the output is stable byte for byte.
func (n Node) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := n.writeJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (n Node) writeJSON(b *bytes.Buffer) error {
	field := func(first bool, key string, v any) error {
		if !first {
			b.WriteByte(',')
		}
		writeJSONString(b, key)
		b.WriteByte(':')
		switch v := v.(type) {
		case string:
			writeJSONString(b, v)
			return nil
		case json.Number:
			if v != "" {
				b.WriteString(string(v))
				return nil
			}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(raw)
		return nil
	}
	b.WriteByte('{')
	if err := field(true, "pid", n.PID); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"kind", n.Kind}, {"name", n.Name}, {"status", n.Status}} {
		if err := field(false, kv[0], kv[1]); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(n.Figures) {
		if reservedKeys[k] {
			continue
		}
		if err := field(false, k, n.Figures[k]); err != nil {
			return err
		}
	}
	b.WriteString(`,"children":[`)
	for i, c := range n.Children {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := c.writeJSON(b); err != nil {
			return err
		}
	}
	b.WriteString("]}")
	return nil
}

// writeJSONString writes s as a JSON string the way encoding/json does;
// plain text (see plainText) needs no escapes and is written as it is.
func writeJSONString(b *bytes.Buffer, s string) {
	if plainText(s) {
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	raw, _ := json.Marshal(s) // a string always encodes
	b.Write(raw)
}

// WriteText writes the tree as indented text, one node per line:
//
//	family "family" running
//	  being "Ada" running balance=9.5 cycle=3
//
// Each line is the kind, the quoted name, the status and the figures as
// key=value in key order; nested objects are flattened with dotted keys
// (errors.transient=2). A value that is not a plain word is quoted the
// Go way. A node that never described itself shows "?" as its kind and
// its pid as pid=<id>. Children are indented two spaces deeper than their
// parent.
func (n Node) WriteText(w io.Writer) error {
	var b strings.Builder
	n.writeText(&b, 0)
	_, err := io.WriteString(w, b.String())
	return err
}

func (n Node) writeText(b *strings.Builder, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	kind := n.Kind
	if kind == "" {
		kind = "?"
	}
	b.WriteString(textValue(kind))
	b.WriteByte(' ')
	b.WriteString(strconv.Quote(n.Name))
	b.WriteByte(' ')
	b.WriteString(textValue(n.Status))
	var pairs []string
	flatten("", n.Figures, &pairs)
	if n.Kind == "" {
		pairs = append(pairs, "pid="+textValue(n.PID))
	}
	for _, p := range pairs {
		b.WriteByte(' ')
		b.WriteString(p)
	}
	b.WriteByte('\n')
	for _, c := range n.Children {
		c.writeText(b, depth+1)
	}
}

// flatten appends key=value for every leaf of figures in key order,
// joining nested object keys with dots.
func flatten(prefix string, figures map[string]any, out *[]string) {
	for _, k := range sortedKeys(figures) {
		if prefix == "" && reservedKeys[k] {
			continue
		}
		key := prefix + k
		v := figures[k]
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			flatten(key+".", m, out)
			continue
		}
		*out = append(*out, textValue(key)+"="+textLeaf(v))
	}
}

// textLeaf renders one figure value: strings and numbers bare when they
// are plain words, anything else as compact JSON.
func textLeaf(v any) string {
	switch v := v.(type) {
	case string:
		return textValue(v)
	case json.Number:
		return v.String()
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return strconv.Quote("(unencodable)")
		}
		return textValue(string(raw))
	}
}

// textValue returns s unchanged when it is a non-empty plain word and
// Go-quoted otherwise, so every line splits unambiguously on spaces.
func textValue(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || r == '"' || r == '\\' || r == '=' {
			return strconv.Quote(s)
		}
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
