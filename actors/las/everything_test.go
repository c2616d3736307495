package las

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/test/testkit"
)

func TestServerEverything(t *testing.T) {
	entry := testkit.ServerEverything(t)
	opts := Options{
		Command:      "node",
		Entrypoint:   entry,
		AgentID:      "agent-ada",
		CallTimeout:  20 * time.Second,
		PingInterval: -1,
		Logger:       quietLogger(),
		LookupEnv:    func(string) (string, bool) { return "", false },
	}
	h := startWith(t, opts, supervision.LasConfig{}, "")
	// It announces list_changed before answering initialize, and speaks
	// 2024-11-05 when asked (anything else would fail the handshake).
	cat := h.catalog()
	require.True(t, cat.Available)
	var names []string
	for _, tl := range cat.Tools {
		names = append(names, tl.Function.Name)
	}
	assert.Contains(t, names, "echo")
	assert.Contains(t, names, "get-sum")

	res := h.call("echo", `{"message":"hello from singularity"}`, 20*time.Second)
	require.Equal(t, outcome.Success, res.Status)
	assert.Contains(t, string(res.Content), "Echo: hello from singularity")

	// Its get-env tool shows what a third-party server sees of our
	// environment: only the scrubbed set.
	env := h.call("get-env", `{}`, 20*time.Second)
	require.Equal(t, outcome.Success, env.Status)
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(env.Content, &result))
	require.NotEmpty(t, result.Content)
	text := result.Content[0].Text
	assert.Contains(t, text, "SKARBIEC_MCP_AGENT_ID")
	assert.NotContains(t, text, "HOME")
	assert.False(t, strings.Contains(text, "GOPATH") || strings.Contains(text, "GOROOT"))

	d := h.describe()
	assert.Equal(t, "running", d.Status)
	_ = messages.DescribeRequest{}
}
