package mcpremote

import (
	"encoding/json"
	"testing"
)

// TestWithAgentID: the agentId goes into the params of initialize, and
// every other body is left as it is.
func TestWithAgentID(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","agentId":"agent-ada"}}`},
		{"another method", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"initialize without params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`},
		{"not JSON", `not json`, `not json`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := withAgentID([]byte(tt.body), "agent-ada")
			if !sameJSON(got, []byte(tt.want)) && string(got) != tt.want {
				t.Errorf("withAgentID(%s) = %s, want %s", tt.body, got, tt.want)
			}
		})
	}
}

func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
