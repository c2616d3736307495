package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/tools/catalog"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
)

// doctorReport is what `doctor` prints: on success, and when an MCP
// server of a servers file failed (OK false).
type doctorReport struct {
	OK         bool            `json:"ok"`
	BramaModel string          `json:"brama_model"`
	Most       json.RawMessage `json:"most"`
	LasTools   int             `json:"las_tools"`
	// Servers are the servers file's servers in file order, each with
	// its tool count or its failure; absent for the classic Las.
	Servers []serverCheck `json:"servers,omitempty"`
}

// maxModelsShown bounds the models an unavailable model's refusal lists.
const maxModelsShown = 20

// runDoctor is the read-only preflight of docs/configuration.md#doctor:
// Brama health (for another gateway, its model list), the configured model,
// the survival tiers' models, Most health when configured, and Las spawned exactly as `run` does with
// its required surfaces checked; with a servers file, each server on its
// own, every one of which must list a tool. It writes no state.
func runDoctor(e *env, rt config.Runtime, format string) error {
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
		ids, err := client.Models(ctx)
		if err != nil {
			return err
		}
		if !slices.Contains(ids, rt.Brama.Model) {
			return fault.Errorf(fault.ClassConfiguration, "configured Brama model is unavailable: %s%s", rt.Brama.Model, offered(ids))
		}
	}
	unlisted, err := checkTierModels(ctx, client, rt)
	if err != nil {
		return err
	}
	if unlisted != nil {
		return unlisted
	}
	report := doctorReport{OK: true, BramaModel: rt.Brama.Model, Most: json.RawMessage("null")}
	if rt.Most.Enabled() {
		health, err := mostClient(rt).CheckHealth(ctx)
		if err != nil {
			return err
		}
		if len(health.Status) > 0 {
			report.Most = health.Status
		}
	}
	opts := lasOptions(rt, e.log)
	switch {
	case opts == nil: // a servers file without servers: built-ins only
	case len(opts.Servers) == 0:
		tools, err := las.ListTools(ctx, *opts)
		if err != nil {
			return err
		}
		report.LasTools = len(tools)
	default:
		// The servers start as the root's would (docs/las.md#per-being-values).
		root := config.BeingValues{Dir: rt.StateDir, ID: filepath.Base(rt.StateDir), Workspace: rt.Workspace}
		if abs, err := filepath.Abs(rt.StateDir); err == nil {
			root.Dir = abs
		}
		report.Servers = checkServers(ctx, opts.ForBeing(root.Expand))
		err = serversVerdict(report.Servers, opts.RequiredSurfaces)
		for _, c := range report.Servers {
			report.LasTools += c.Tools
		}
		report.OK = err == nil
		if werr := writeDoctor(e.stdout, report, format); werr != nil {
			return werr
		}
		return err
	}
	if err := writeDoctor(e.stdout, report, format); err != nil {
		return err
	}
	if line := freeModelLine(rt); line != "" {
		fmt.Fprintln(e.stderr, line)
	}
	return nil
}

// offered is the tail of an unavailable model's refusal: up to
// maxModelsShown of the models the gateway lists, in its order.
func offered(ids []string) string {
	if len(ids) == 0 {
		return "; the gateway lists no model"
	}
	shown := ids[:min(len(ids), maxModelsShown)]
	more := ""
	if len(ids) > len(shown) {
		more = fmt.Sprintf(", and %d more", len(ids)-len(shown))
	}
	return "; the gateway offers " + strings.Join(shown, ", ") + more
}

// writeDoctor prints the report: one JSON line, or as text one line per
// check.
func writeDoctor(w io.Writer, r doctorReport, format string) error {
	if format == "text" {
		verdict := "ok"
		if !r.OK {
			verdict = "failed"
		}
		most := "not configured"
		if string(r.Most) != "null" {
			most = string(r.Most)
		}
		fmt.Fprintf(w, "doctor: %s\nmodel: %s\nmost: %s\nlas tools: %d\n", verdict, r.BramaModel, most, r.LasTools)
		for _, c := range r.Servers {
			if c.Error != "" {
				fmt.Fprintf(w, "server %s: failed: %s\n", c.Name, c.Error)
			} else {
				fmt.Fprintf(w, "server %s: %d tools\n", c.Name, c.Tools)
			}
		}
		return nil
	}
	out, err := json.Marshal(r)
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "doctor report: %w", err)
	}
	fmt.Fprintln(w, string(out))
	return nil
}

// checkTierModels checks the survival tiers' model ids against the
// gateway's model list (docs/money.md#survival-tiers), asked only when a
// tier names one. unlisted is the refusal of a tier whose model the list
// does not hold; err is the failure to get the list, which doctor
// reports and the boot passes over (bootTierModels).
func checkTierModels(ctx context.Context, client *brama.Client, rt config.Runtime) (unlisted, err error) {
	if len(config.TierModels(rt.Tiers)) == 0 {
		return nil, nil
	}
	listed, err := client.Models(ctx)
	if err != nil {
		return nil, err
	}
	return config.CheckTierModels(rt.Tiers, listed), nil
}

// bootTierModels is the check of the tiers' models when once or run
// boots. A gateway that does not answer with a list (down for now, or
// without one) is not checked: the boot goes on, and a tier model the
// gateway refuses later is treated as one not served
// (docs/brama.md#unserved-models).
func bootTierModels(ctx context.Context, client *brama.Client, rt config.Runtime, log *slog.Logger) error {
	unlisted, err := checkTierModels(ctx, client, rt)
	if err != nil {
		log.Warn("tier models not checked: no model list", "err", err)
	}
	return unlisted
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
	tools, err := buildCatalog(ctx, opts, t.FamilyTools)
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
// docs/tools.md#the-catalogue applied, and the family tools when family
// is set. It never holds the Most tools.
func buildCatalog(ctx context.Context, opts *las.Options, family bool) ([]chat.Tool, error) {
	var lasTools []chat.Tool
	if opts != nil { // nil: a servers file without servers, built-ins only
		var err error
		if lasTools, err = las.ListTools(ctx, *opts); err != nil {
			return nil, err
		}
	}
	c, err := catalog.Standard(lasTools, catalog.Extras{Family: family})
	if err != nil {
		return nil, err
	}
	return c.Tools(), nil
}
