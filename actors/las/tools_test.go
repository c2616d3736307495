package las

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/world/examplelas"
)

func TestBuildCatalogForToolsCommand(t *testing.T) {
	cfg := examplelas.Config{Surfaces: []string{"echo", "finance"}}
	opts := baseOptions(t, &cfg)
	opts.RequiredSurfaces = nil // the tools command does not check surfaces
	only := "echo,finance"
	opts.Only = &only
	opts.AgentID = ""
	tools, err := BuildCatalog(context.Background(), opts, false)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Function.Name)
	}
	want := []string{"echo__echo", "finance__finance_quote", "finance__finance_sales_summary", "finance__finance_sell_report"}
	want = append(want, builtin.Names()...)
	assert.Equal(t, want, names)
	table := catalog.FormatTable(tools)
	assert.Contains(t, table, "echo__echo\tEcho a message back unchanged\n")
	assert.Contains(t, table, "singularity_memory_remember\tPersist a memory owned by this digital being\n")
}

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
	opts := Options{Command: exampleLas, Entrypoint: conf, AgentID: "a", Logger: quietLogger(), CallTimeout: 5 * time.Second}
	_, err := ListTools(context.Background(), opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "restart intensity exceeded")
}
