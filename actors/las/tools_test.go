package las

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
