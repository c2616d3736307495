package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/test/testkit"
	"github.com/wisent/singularity/world/examplelas"
)

// TestMain removes the example Las binary the tests build.
func TestMain(m *testing.M) { testkit.Main(m) }

func TestBuildCatalogForToolsCommand(t *testing.T) {
	dir := t.TempDir()
	b, err := json.Marshal(examplelas.Config{Surfaces: []string{"echo", "finance"}, DeliveriesFile: filepath.Join(dir, "deliveries")})
	require.NoError(t, err)
	conf := filepath.Join(dir, "las.json")
	require.NoError(t, os.WriteFile(conf, b, 0o600))
	only := "echo,finance"
	opts := las.Options{
		Command:     testkit.ExampleLas(t),
		Entrypoint:  conf,
		Only:        &only,
		CallTimeout: 5 * time.Second,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		LookupEnv:   func(string) (string, bool) { return "", false },
	}
	tools, err := buildCatalog(context.Background(), &opts)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Function.Name)
	}
	want := []string{"echo__echo", "finance__finance_quote", "finance__finance_sales_summary", "finance__finance_sell_report"}
	for _, tl := range builtin.Definitions() {
		want = append(want, tl.Function.Name)
	}
	assert.Equal(t, want, names)
	table := catalog.FormatTable(tools)
	assert.Contains(t, table, "echo__echo\tEcho a message back unchanged\n")
	assert.Contains(t, table, "singularity_memory_remember\tPersist a memory owned by this digital being\n")
}
