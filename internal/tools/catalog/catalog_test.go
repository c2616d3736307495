package catalog

import (
	"encoding/json"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/most"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
)

var obj = json.RawMessage(`{"type":"object","properties":{}}`)

func tool(name string) chat.Tool { return chat.NewTool(name, "does "+name, obj) }

// builtinNames lists the built-in tools' names in catalogue order.
func builtinNames() []string {
	var names []string
	for _, tl := range builtin.Definitions() {
		names = append(names, tl.Function.Name)
	}
	return names
}

func TestBuildOrderAndLookup(t *testing.T) {
	c, err := Standard([]chat.Tool{tool("finance__b"), tool("echo__a")}, Extras{Most: true})
	require.NoError(t, err)
	names := []string{}
	for _, tl := range c.Tools() {
		names = append(names, tl.Function.Name)
	}
	want := append([]string{"finance__b", "echo__a"}, builtinNames()...)
	want = append(want, most.Names()...)
	assert.Equal(t, want, names, "Las order first, then built-ins, then Most")

	o, ok := c.Lookup("finance__b")
	assert.True(t, ok)
	assert.Equal(t, Las, o)
	o, _ = c.Lookup(builtin.FileRead)
	assert.Equal(t, Builtin, o)
	o, _ = c.Lookup(most.Health)
	assert.Equal(t, Most, o)
	_, ok = c.Lookup("finance__gone")
	assert.False(t, ok)
	u := UnknownTool()
	assert.Equal(t, "unknown_tool", u.ErrorCode)
	assert.JSONEq(t, `{"message":"tool is not in the current catalog"}`, string(u.Content))

	withoutMost, err := Standard(nil, Extras{})
	require.NoError(t, err)
	assert.Equal(t, len(builtin.Definitions()), withoutMost.Len())
	_, ok = withoutMost.Lookup(builtin.MessageSend)
	assert.False(t, ok, "the family tools are off by default")

	family, err := Standard([]chat.Tool{tool("echo__a")}, Extras{Most: true, Family: true})
	require.NoError(t, err)
	names = names[:0]
	for _, tl := range family.Tools() {
		names = append(names, tl.Function.Name)
	}
	want = append(append([]string{"echo__a"}, builtinNames()...), builtin.MessageSend, builtin.SelfSleep)
	assert.Equal(t, append(want, most.Names()...), names, "the family tools follow the nine built-ins")
	o, _ = family.Lookup(builtin.SelfSleep)
	assert.Equal(t, Builtin, o)

	decoded := string([]byte("finance__b")) // a fresh copy, as a completion decodes it
	own := c.Canonical(decoded)
	assert.Equal(t, "finance__b", own)
	assert.Same(t, unsafe.StringData(c.Tools()[0].Function.Name), unsafe.StringData(own), "the catalogue's own string")
	assert.Equal(t, "finance__gone", c.Canonical("finance__gone"), "an unknown name is itself")
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		las  []chat.Tool
		want string
	}{
		{"empty name", []chat.Tool{tool("")}, "tool: invalid tool name: "},
		{"space", []chat.Tool{tool("a b")}, "tool: invalid tool name: a b"},
		{"dot", []chat.Tool{tool("a.b")}, "tool: invalid tool name: a.b"},
		{"non ascii", []chat.Tool{tool("zółw")}, "tool: invalid tool name: zółw"},
		{"schema array", []chat.Tool{chat.NewTool("x", "", json.RawMessage(`[]`))}, "tool: tool schema is not an object: x"},
		{"schema string", []chat.Tool{chat.NewTool("x", "", json.RawMessage(`"object"`))}, "tool: tool schema is not an object: x"},
		{"schema missing", []chat.Tool{chat.NewTool("x", "", nil)}, "tool: tool schema is not an object: x"},
		{"schema broken", []chat.Tool{chat.NewTool("x", "", json.RawMessage(`{"a":`))}, "tool: tool schema is not an object: x"},
		{"duplicate las", []chat.Tool{tool("echo__a"), tool("echo__a")}, "tool: duplicate tool: echo__a"},
		{"collides with built-in", []chat.Tool{tool(builtin.MemoryRecall)}, "tool: duplicate tool: singularity_memory_recall"},
		{"collides with most", []chat.Tool{tool(most.Health)}, "tool: duplicate tool: most_health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Standard(tt.las, Extras{Most: true})
			require.EqualError(t, err, tt.want)
			assert.Equal(t, fault.ClassTool, fault.ClassOf(err))
			assert.Equal(t, 5, fault.ExitCode(err))
		})
	}
}

func TestFormat(t *testing.T) {
	tools := []chat.Tool{tool("echo__a"), chat.NewTool("b", "two\nlines", obj)}
	assert.Equal(t, "echo__a\tdoes echo__a\nb\ttwo lines\n", FormatTable(tools), "no header")
	assert.Equal(t, "", FormatTable(nil), "no tools, no line")
	b, err := FormatJSON(tools)
	require.NoError(t, err)
	var back []chat.Tool
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, "echo__a", back[0].Function.Name)
	assert.Contains(t, string(b), "\n  {\n")
	empty, err := FormatJSON(nil)
	require.NoError(t, err)
	assert.Equal(t, "[]\n", string(empty))
}
