package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
)

// doctorReport is what a successful `doctor` prints.
type doctorReport struct {
	OK         bool            `json:"ok"`
	BramaModel string          `json:"brama_model"`
	Most       json.RawMessage `json:"most"`
	LasTools   int             `json:"las_tools"`
}

// runDoctor is the read-only preflight of docs/configuration.md#doctor:
// Brama health (for another gateway, its model list), the configured model,
// Most health when configured, and Las spawned exactly as `run` does with
// its required surfaces checked. It writes no state.
func runDoctor(e *env, rt config.Runtime) error {
	ctx, cancel := context.WithTimeout(e.ctx, rt.HTTPTimeout*2+rt.MCPTimeout*2)
	defer cancel()
	client, err := bramaClient(rt)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	if err := client.Health(ctx); err != nil {
		return err
	}
	if !doctorSelector(client.Auth(), rt.Brama.Model) {
		ok, err := client.Available(ctx, rt.Brama.Model)
		if err != nil {
			return err
		}
		if !ok {
			return fault.Errorf(fault.ClassConfiguration, "configured Brama model is unavailable: %s", rt.Brama.Model)
		}
	}
	mostStatus := json.RawMessage("null")
	if rt.Most.Enabled() {
		report, err := mostClient(rt).CheckHealth(ctx)
		if err != nil {
			return err
		}
		if len(report.Status) > 0 {
			mostStatus = report.Status
		}
	}
	var tools []chat.Tool
	if opts := lasOptions(rt, e.log); opts != nil {
		if tools, err = las.ListTools(ctx, *opts); err != nil {
			return err
		}
	}
	out, err := json.Marshal(doctorReport{OK: true, BramaModel: rt.Brama.Model, Most: mostStatus, LasTools: len(tools)})
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "doctor report: %w", err)
	}
	fmt.Fprintln(e.stdout, string(out))
	if line := freeModelLine(rt); line != "" {
		fmt.Fprintln(e.stderr, line)
	}
	return nil
}

// freeModelLine is the line doctor adds on stderr when the configured
// model would be charged nothing and the configuration allows it
// (docs/money.md#no-free-model-by-accident): a keyless server, or
// --allow-free-model. Empty when the model has a price or the gateway is
// Brama.
func freeModelLine(rt config.Runtime) string {
	if rt.Brama.Auth.Brama() || !rt.Brama.Prices.Free(rt.Brama.Model, rt.OptionPrices()) {
		return ""
	}
	why := "a keyless (none) server"
	if rt.Brama.Auth == gateway.AuthBearer {
		why = "--allow-free-model is set"
	}
	return fmt.Sprintf("doctor: model %s has no price and runs free: %s", rt.Brama.Model, why)
}

// doctorSelector reports whether doctor skips the model listing: the
// gateway is Brama and the model is a selector (any, any-vision-capable,
// best or task:…; see docs/brama.md#model-selection). Configuration has
// already refused selectors for any other gateway.
func doctorSelector(auth gateway.Auth, model string) bool {
	return auth.Brama() && gateway.IsSelector(model)
}

// runTools is `tools`: Las spawned as `run` would, with no required
// surfaces and the fixed 120 s deadline, merged with the built-ins
// (never the Most tools) and printed.
func runTools(e *env, t *toolsCmd) error {
	l, err := config.LoadLas(t.Las)
	if err != nil {
		return err
	}
	ws, err := config.Workspace(t.Workspace)
	if err != nil {
		return err
	}
	rt := config.Runtime{Las: l, MCPTimeout: las.ToolsCommandTimeout, Workspace: ws}
	rt.Identity.AgentID = t.AgentID
	e.holdSecrets(secrets(rt))
	opts := lasOptions(rt, e.log)
	if opts != nil {
		opts.RequiredSurfaces = nil
	}
	ctx, cancel := context.WithTimeout(e.ctx, 3*las.ToolsCommandTimeout)
	defer cancel()
	tools, err := buildCatalog(ctx, opts)
	if err != nil {
		return err
	}
	if t.Format == "table" {
		fmt.Fprint(e.stdout, catalog.FormatTable(tools))
		return nil
	}
	out, err := catalog.FormatJSON(tools)
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "catalogue: %w", err)
	}
	fmt.Fprintln(e.stdout, string(out))
	return nil
}

// buildCatalog is the catalogue the `tools` command prints: the tools Las
// lists (in Las order), then the built-ins, with the registration rules of
// docs/tools.md#the-catalogue applied. It never holds the Most tools.
func buildCatalog(ctx context.Context, opts *las.Options) ([]chat.Tool, error) {
	var lasTools []chat.Tool
	if opts != nil { // nil: a servers file without servers, built-ins only
		var err error
		if lasTools, err = las.ListTools(ctx, *opts); err != nil {
			return nil, err
		}
	}
	c, err := catalog.Standard(lasTools, false)
	if err != nil {
		return nil, err
	}
	return c.Tools(), nil
}
