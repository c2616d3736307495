package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestMemoryServerPerBeing: a family whose servers file runs the npm
// memory server with MEMORY_FILE_PATH=${SINGULARITY_BEING_DIR}/memory.jsonl
// keeps one memory file per being, each in the being's own state
// directory: the root spawns a child, and each being's create_entities
// lands in its own file.
func TestMemoryServerPerBeing(t *testing.T) {
	t.Parallel()
	memory := testkit.NPMServer(t, "server-memory")
	w := standaloneWorld(t)
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": "node", "args": []string{memory},
			"env": map[string]string{"MEMORY_FILE_PATH": "${SINGULARITY_BEING_DIR}/memory.jsonl"}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(w.env["LAS_SERVERS_FILE"], servers, 0o600))

	var spawned atomic.Bool
	w.brama.SetHandler(func(r *bramatest.Request) bramatest.Reply {
		msgs := r.Completion.Messages
		if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
			return bramatest.TextReply("noted", bramatest.Usage(100, 10))
		}
		calls := []chat.ToolCall{bramatest.Call("m", "memory__create_entities",
			`{"entities":[{"name":"note","entityType":"note","observations":["kept"]}]}`)}
		if spawned.CompareAndSwap(false, true) {
			calls = append(calls, bramatest.Call("s", "singularity_spawn_child",
				`{"name":"Bo","ticker":"BO","specialty":"memory","endowment_usd":"1"}`))
		}
		return bramatest.ToolCallsReply(bramatest.Usage(100, 10), calls...)
	})
	p := w.start("run")
	root := filepath.Join(w.stateDir, "memory.jsonl")
	var child string
	deadline := time.Now().Add(60 * time.Second)
	for {
		matches, _ := filepath.Glob(filepath.Join(w.stateDir, "children", "*", "memory.jsonl"))
		_, rootErr := os.Stat(root)
		if len(matches) == 1 && rootErr == nil {
			child = matches[0]
			break
		}
		require.True(t, time.Now().Before(deadline), "one memory file per being never appeared: root %v, children %v\n%s", rootErr, matches, p.stderr.String())
		time.Sleep(20 * time.Millisecond) // polling another process's files
	}
	p.signal(syscall.SIGTERM)
	r := p.wait(waitLimit)
	require.Equal(t, 0, r.code, r.stderr)

	rootData, err := os.ReadFile(root)
	require.NoError(t, err)
	childData, err := os.ReadFile(child)
	require.NoError(t, err)
	assert.Contains(t, string(rootData), `"name":"note"`)
	assert.Contains(t, string(childData), `"name":"note"`)
	assert.NotEqual(t, root, child)
	// Nothing was written where the servers file's text points without
	// its expansion, nor beside the memory server's package.
	_, err = os.Stat(filepath.Join(filepath.Dir(memory), "memory.jsonl"))
	assert.True(t, os.IsNotExist(err), "the package's own memory file")
	entries, err := os.ReadDir(w.env["SINGULARITY_WORKSPACE"])
	require.NoError(t, err)
	assert.Empty(t, entries)
}
