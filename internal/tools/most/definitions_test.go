package most

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefinitions(t *testing.T) {
	tools := Definitions()
	require.Len(t, tools, 3)
	require.Equal(t, []string{"most_health", "most_create_chat", "most_send_message"},
		[]string{tools[0].Function.Name, tools[1].Function.Name, tools[2].Function.Name})
	require.Equal(t, "Check Most messaging readiness and active backends", tools[0].Function.Description)
	require.Equal(t, "Create a Most chat and send its first text message", tools[1].Function.Description)
	require.Equal(t, "Send a text message to an existing Most chat", tools[2].Function.Description)
	for _, tl := range tools {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		require.NoError(t, json.Unmarshal(tl.Function.Parameters, &schema))
		require.Equal(t, "object", schema.Type)
		require.NotContains(t, schema.Required, "preferred_service")
	}
}
