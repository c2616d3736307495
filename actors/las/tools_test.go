package las

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/examplelas"
)

func TestListToolsReportsPermanentFailureAtOnce(t *testing.T) {
	cfg := examplelas.Config{}
	opts := baseOptions(t, &cfg)
	opts.Command = filepath.Join(t.TempDir(), "missing")
	begun := time.Now()
	_, err := ListTools(context.Background(), opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mcp: cannot start Las: fork/exec ")
	assert.Less(t, time.Since(begun), 10*time.Second)
}

func TestListToolsSurvivesAFirstCrash(t *testing.T) {
	// Not a test of restarts (see the actor tests) but of the command's
	// patience: an unreadable config makes the example Las exit, and the
	// failure reaches the caller as an error instead of a hang.
	dir := t.TempDir()
	conf := filepath.Join(dir, "broken.json")
	require.NoError(t, os.WriteFile(conf, []byte("{not json"), 0o600))
	opts := Options{Command: testkit.ExampleLas(t), Entrypoint: conf, AgentID: "a", Logger: quietLogger(), CallTimeout: 5 * time.Second}
	_, err := ListTools(context.Background(), opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "restart intensity exceeded")
}

// TestScreenToolsRedactsDescriptionsAndSchemas: the secrets a server puts
// in its tool list are redacted from descriptions and parameter schemas
// (descriptions of properties and enum values included); names and the
// list's order stay, and the list given is not changed.
func TestScreenToolsRedactsDescriptionsAndSchemas(t *testing.T) {
	const key = "srv-token-2b7d90ae"
	secrets := boundary.NewSecrets([]byte("Bearer " + key))
	tools := []chat.Tool{
		chat.NewTool("a__one", "Calls home with Bearer "+key, json.RawMessage(`{"type":"object","properties":{"k":{"type":"string","description":"use `+key+`","enum":["`+key+`"]}}}`)),
		chat.NewTool("a__two", "Harmless", json.RawMessage(`{"type":"object"}`)),
	}
	got := screenTools(tools, secrets)
	require.Len(t, got, 2)
	assert.Equal(t, "a__one", got[0].Function.Name)
	assert.Equal(t, "Calls home with [redacted]", got[0].Function.Description)
	assert.JSONEq(t, `{"type":"object","properties":{"k":{"type":"string","description":"use [redacted]","enum":["[redacted]"]}}}`, string(got[0].Function.Parameters))
	assert.Equal(t, tools[1], got[1])
	assert.Contains(t, tools[0].Function.Description, key, "the given list is not changed")
	assert.Equal(t, tools, screenTools(tools, nil))
}

// TestForBeing: a being's servers get its values in the command, args,
// env values and cwd; a secret env value is never expanded, and the
// options it came from are unchanged.
func TestForBeing(t *testing.T) {
	opts := Options{Servers: []Server{{
		Name: "m", Command: "/bin/${X}", Args: []string{"--dir", "${X}/a"}, Dir: "${X}",
		Env: []string{"P=${X}/m.jsonl", "K=${X}", "E="}, SecretEnv: map[string]bool{"K": true},
	}}}
	expand := func(s string) string { return strings.ReplaceAll(s, "${X}", "/being") }
	got := opts.ForBeing(expand).Servers[0]
	assert.Equal(t, "/bin//being", got.Command)
	assert.Equal(t, []string{"--dir", "/being/a"}, got.Args)
	assert.Equal(t, "/being", got.Dir)
	assert.Equal(t, []string{"P=/being/m.jsonl", "K=${X}", "E="}, got.Env)
	assert.Equal(t, "${X}", opts.Servers[0].Dir, "the options it came from")
	assert.Equal(t, "P=${X}/m.jsonl", opts.Servers[0].Env[0])
}
