package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/tiers"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
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
	tools, err := buildCatalog(context.Background(), &opts, false)
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

// TestBootTierModels: the boot refuses a tier whose model id the
// gateway's model list does not hold, passes a selector and a listed id,
// asks nothing when no tier names a model id, and goes on unchecked when
// the gateway answers no list (docs/money.md#survival-tiers).
func TestBootTierModels(t *testing.T) {
	listing := bramatest.Start(t, bramatest.Config{Auth: "none", Models: []string{"base", "cheap"}})
	noList := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(noList.Close)
	tier := func(model string) tiers.Table {
		return tiers.Table{{Below: testkit.USD("5")}, {Below: testkit.USD("1"), Model: model}}
	}
	tests := []struct {
		name  string
		url   string
		tiers tiers.Table
		want  string
		asked int
	}{
		{"listed", listing.URL, tier("cheap"), "", 1},
		{"not listed", listing.URL, tier("ghost"), `configuration: SINGULARITY_TIERS_FILE: tier 2: model "ghost" is not in the gateway's model list`, 1},
		{"a selector", listing.URL, tier("task:cheap"), "", 0},
		{"no model", listing.URL, tiers.Table{{Below: testkit.USD("5")}}, "", 0},
		{"no list offered", noList.URL + "/v1", tier("ghost"), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(listing.Requests())
			client, err := brama.NewClient(brama.ClientConfig{BaseURL: tt.url, Auth: gateway.AuthNone, Timeout: 10 * time.Second})
			require.NoError(t, err)
			rt := config.Runtime{Tiers: tt.tiers}
			err = bootTierModels(context.Background(), client, rt, slog.New(slog.DiscardHandler))
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Equal(t, tt.want, err.Error())
				assert.Equal(t, 2, fault.ExitCode(err))
			}
			assert.Equal(t, tt.asked, len(listing.Requests())-before)
		})
	}
}
