package builtin

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefinitions(t *testing.T) {
	tools := Definitions()
	require.Len(t, tools, 9)
	want := []struct{ name, desc, schema string }{
		{"singularity_memory_remember", "Persist a memory owned by this digital being", `{"type":"object","properties":{"kind":{"type":"string"},"text":{"type":"string"}},"required":["kind","text"],"additionalProperties":false}`},
		{"singularity_memory_recall", "Recall persistent memories containing a query", `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false}`},
		{"singularity_self_set_prompt", "Replace this being's persistent system prompt", `{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"],"additionalProperties":false}`},
		{"singularity_self_add_rule", "Add a persistent self-imposed rule", `{"type":"object","properties":{"rule":{"type":"string"}},"required":["rule"],"additionalProperties":false}`},
		{"singularity_self_add_learning", "Record a persistent learning that changes future decisions", `{"type":"object","properties":{"learning":{"type":"string"}},"required":["learning"],"additionalProperties":false}`},
		{"singularity_self_switch_model", "Switch future cognition calls to another available Brama model", `{"type":"object","properties":{"model":{"type":"string"}},"required":["model"],"additionalProperties":false}`},
		{"singularity_spawn_child", "Create and start a child digital being with separate state", `{"type":"object","properties":{"name":{"type":"string"},"ticker":{"type":"string"},"specialty":{"type":"string"},"endowment_usd":{"type":"string"}},"required":["name","ticker","specialty","endowment_usd"],"additionalProperties":false}`},
		{"singularity_file_read", "Read one UTF-8 file inside the configured workspace", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`},
		{"singularity_file_write", "Atomically create or replace one UTF-8 file inside the configured workspace", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`},
	}
	for i, w := range want {
		require.Equal(t, "function", tools[i].Type)
		require.Equal(t, w.name, tools[i].Function.Name)
		require.Equal(t, w.desc, tools[i].Function.Description)
		require.Equal(t, w.schema, string(tools[i].Function.Parameters))
		require.True(t, json.Valid(tools[i].Function.Parameters))
	}
	require.Equal(t, len(want), len(tools))
}
