// Package catalog builds the tool catalogue the model sees
// (docs/tools.md#the-catalogue): the Las tools in Las order, then the
// built-in tools, then the Most tools when enabled, under strict registration
// rules that fail boot rather than shadow or guess. It also formats the
// catalogue for the `tools` command.
package catalog

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/most"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

// Origin says who serves a tool.
type Origin int

// Origins of catalogue entries.
const (
	Las Origin = iota + 1
	Builtin
	Most
)

func (o Origin) String() string {
	switch o {
	case Las:
		return "las"
	case Builtin:
		return "builtin"
	case Most:
		return "most"
	default:
		return "unknown"
	}
}

// Catalog is one registered, immutable catalogue.
type Catalog struct {
	tools  []chat.Tool
	origin map[string]Origin
	names  map[string]string // each name to the catalogue's own copy
}

// Build registers las, then builtins, then most tools, in that order. A
// name that is empty or holds anything but ASCII letters, digits, "_"
// and "-", a parameters schema that is not a JSON object, or a name seen
// twice fails with the exact ClassTool sentence (exit 5).
func Build(las, builtins, mostTools []chat.Tool) (*Catalog, error) {
	c := &Catalog{
		tools:  make([]chat.Tool, 0, len(las)+len(builtins)+len(mostTools)),
		origin: make(map[string]Origin, len(las)+len(builtins)+len(mostTools)),
		names:  make(map[string]string, len(las)+len(builtins)+len(mostTools)),
	}
	for _, group := range []struct {
		origin Origin
		tools  []chat.Tool
	}{{Las, las}, {Builtin, builtins}, {Most, mostTools}} {
		for _, t := range group.tools {
			if err := c.register(t, group.origin); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Extras are the tools a catalogue holds beyond the Las tools and the
// nine built-ins; the zero value adds none.
type Extras struct {
	// Most adds the Most tools, last.
	Most bool
	// Family adds the two family tools after the nine built-ins
	// (--family-tools, docs/tools.md#family-tools).
	Family bool
}

// Standard builds the catalogue of a being: las tools, the nine built-ins
// (and the family tools), and the Most tools, as extras say.
func Standard(las []chat.Tool, extras Extras) (*Catalog, error) {
	var mostTools []chat.Tool
	if extras.Most {
		mostTools = most.Definitions()
	}
	builtins := builtin.Definitions()
	if extras.Family {
		builtins = append(builtins, builtin.FamilyDefinitions()...)
	}
	return Build(las, builtins, mostTools)
}

func (c *Catalog) register(t chat.Tool, origin Origin) error {
	name := t.Function.Name
	if !ValidName(name) {
		return fault.Errorf(fault.ClassTool, "invalid tool name: %s", name)
	}
	if !isObject(t.Function.Parameters) {
		return fault.Errorf(fault.ClassTool, "tool schema is not an object: %s", name)
	}
	if _, dup := c.origin[name]; dup {
		return fault.Errorf(fault.ClassTool, "duplicate tool: %s", name)
	}
	if t.Type == "" {
		t.Type = "function"
	}
	c.origin[name] = origin
	c.names[name] = name
	c.tools = append(c.tools, t)
	return nil
}

// Canonical returns the catalogue's own copy of a registered name, or
// name itself when it is not registered: a being that keeps a name (its
// action records) shares the catalogue's string instead of holding the
// one decoded from each completion.
func (c *Catalog) Canonical(name string) string {
	if own, ok := c.names[name]; ok {
		return own
	}
	return name
}

// ValidName reports whether name is non-empty ASCII letters, digits, "_"
// and "-".
func ValidName(name string) bool {
	if name == "" {
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

func isObject(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) > 0 && s[0] == '{' && json.Valid(s)
}

// Tools returns the catalogue in order; the slice is a copy.
func (c *Catalog) Tools() []chat.Tool { return append([]chat.Tool(nil), c.tools...) }

// Len is the number of tools.
func (c *Catalog) Len() int { return len(c.tools) }

// Lookup reports who serves name; ok is false for a name not in the
// catalogue (the call then fails with UnknownTool, never reaching Las).
func (c *Catalog) Lookup(name string) (origin Origin, ok bool) {
	origin, ok = c.origin[name]
	return origin, ok
}

// UnknownToolMessage is what the model reads for a tool not in the
// catalogue.
const UnknownToolMessage = "tool is not in the current catalog"

// UnknownTool is the outcome of a call to a name not in the catalogue.
func UnknownTool() outcome.Outcome { return outcome.Failure("unknown_tool", UnknownToolMessage) }

// FormatTable renders tools as the `tools --format table` output: one
// "name<TAB>description" line per tool, each ending in a newline, and no
// header, so scripts read every line as a tool. Line breaks and tabs
// inside a description are folded to spaces so each tool stays one line
// of two fields. No tools is the empty string.
func FormatTable(tools []chat.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		b.WriteString(t.Function.Name)
		b.WriteByte('\t')
		b.WriteString(oneLine.Replace(t.Function.Description))
		b.WriteByte('\n')
	}
	return b.String()
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

// FormatJSON renders tools as a pretty JSON array of their full
// definitions (the default `tools` output), ending in a newline.
func FormatJSON(tools []chat.Tool) ([]byte, error) {
	if tools == nil {
		tools = []chat.Tool{}
	}
	b, err := json.MarshalIndent(tools, "", "  ")
	if err != nil {
		return nil, fault.Errorf(fault.ClassRuntime, "encode catalog: %w", err)
	}
	return append(b, '\n'), nil
}
