package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/world/examplelas"
	"github.com/wisent/singularity/world/simbrama"
)

// demoCmd runs the embedded demo world (docs/demo.md#running-the-demo): a
// simulated Brama on loopback, the example Las as a real child process, and
// the whole family living with the debug endpoint on. Everything it shows is
// a simulation.
type demoCmd struct {
	Cycles    uint64 `name:"cycles" default:"0" help:"Stop after N more cycles of the root being (0: run until Ctrl-C); a sandbox that holds state resumes it."`
	Dir       string `name:"dir" help:"Sandbox directory (default: a new temporary directory)."`
	DebugAddr string `name:"debug-addr" default:"127.0.0.1:0" help:"Debug endpoint address (loopback)."`
	Interval  string `name:"cycle-interval-secs" default:"1" help:"Seconds between cycles."`
}

// exampleLasCmd serves the example Las on stdio: the demo world's skill
// process, started by the demo as a child process of this same binary.
type exampleLasCmd struct {
	Config string `arg:"" optional:"" help:"Optional JSON configuration file."`
}

func (c *exampleLasCmd) Run(e *env) error {
	var args []string
	if c.Config != "" {
		args = []string{c.Config}
	}
	if code := examplelas.Main(args); code != 0 {
		return fault.Errorf(fault.ClassMCP, "example Las exited with code %d", code)
	}
	return nil
}

// demoSecretFile is the sandbox's Brama secret, fresh for every run and
// removed at its end.
const demoSecretFile = "brama.secret"

const demoHex = "0000000000000000000000000000000000000000000000000000000000000000"

func (d *demoCmd) Run(e *env) (err error) {
	sandbox, err := d.sandbox()
	if err != nil {
		return err
	}
	// The sandbox goes at the end unless --dir named it; its secret file
	// goes in any case (docs/demo.md#the-sandbox).
	defer func() {
		if d.Dir == "" {
			if rmErr := os.RemoveAll(sandbox); rmErr != nil && err == nil {
				err = fault.Errorf(fault.ClassState, "sandbox: %w", rmErr)
			} else if rmErr == nil {
				fmt.Fprintf(e.stdout, "sandbox %s removed (give --dir to keep one)\n", sandbox)
			}
			return
		}
		if rmErr := os.Remove(filepath.Join(sandbox, demoSecretFile)); rmErr != nil && !os.IsNotExist(rmErr) && err == nil {
			err = fault.Errorf(fault.ClassState, "sandbox: %w", rmErr)
		}
	}()
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fault.Errorf(fault.ClassRuntime, "demo secret: %w", err)
	}
	secretHex := []byte(hex.EncodeToString(secret))
	sim, err := simbrama.Start(secretHex, simbrama.Options{RootName: "Ada", GrandchildParent: "Bo"})
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "simulated Brama: %w", err)
	}
	defer sim.Close()

	rt, err := d.configuration(sandbox, sim.URL(), secretHex)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fault.Errorf(fault.ClassRuntime, "demo: %w", err)
	}
	fmt.Fprintf(e.stdout, "Singularity demo world — a SIMULATION: the model is a scripted simulated Brama at %s,\n", sim.URL())
	fmt.Fprintf(e.stdout, "the skills come from the example Las; no real money moves.\n")
	fmt.Fprintf(e.stdout, "sandbox: %s\n", sandbox)

	rootOpts, err := rootOptions(rt, being.Run, e.log)
	if err != nil {
		return err
	}
	rootOpts.Las.Command = self
	rootOpts.Las.Entrypoint = "example-las"
	rootOpts.Observer = newDemoEvents(e.stdout, rt.StartingBalance)
	from, err := resumedCycle(rt)
	if err != nil {
		return err
	}
	if rt.Resume {
		fmt.Fprintf(e.stdout, "resuming the family saved in the sandbox at cycle %d of the root being\n", from)
	}
	target := uint64(0)
	if d.Cycles > 0 {
		target = from + d.Cycles
	}
	rootOpts.MaxCycles = target
	l, err := startFamilyWith(e, rt, rootOpts, held{})
	if err != nil {
		return err
	}
	if l.debug != nil {
		fmt.Fprintf(e.stdout, "debug endpoint: http://%s/debug/ (JSON at /debug/actors, text at /debug/actors?format=text, Prometheus metrics at /metrics)\n", l.debug.Addr())
	}
	if d.Cycles > 0 {
		fmt.Fprintf(e.stdout, "running %d cycles of the root being (Ctrl-C stops earlier; --cycles 0 runs until Ctrl-C)...\n", d.Cycles)
	} else {
		fmt.Fprintln(e.stdout, "running until Ctrl-C...")
	}
	stopped, err := d.live(e, l, target)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "\nfamily %s. Summary (simulated money):\n", stopped.Status)
	if err := writeSummary(e.stdout, rt.StateDir); err != nil {
		return err
	}
	if stopped.Status == state.StatusFailed && stopped.Err != nil {
		return stopped.Err
	}
	return nil
}

// resumedCycle is the root being's cycle counter when the sandbox holds
// state (the demo resumes it), else 0.
func resumedCycle(rt config.Runtime) (uint64, error) {
	if !rt.Resume {
		return 0, nil
	}
	b, err := state.Load(rt.StateDir)
	if err != nil {
		return 0, err
	}
	return b.Cycle, nil
}

// live waits for the root's cycle number target (0: none), a signal, or
// the family's end.
func (d *demoCmd) live(e *env, l *live, target uint64) (messages.FamilyStopped, error) {
	sigs, stop := notifySignals()
	defer stop()
	for {
		select {
		case ev := <-l.events:
			switch msg := ev.(type) {
			case messages.CycleReport:
				fmt.Fprintf(e.stdout, "  root cycle %d %s: balance %s USD, earned %s USD\n", msg.Cycle, msg.Status, msg.Balance.Human(), msg.Earned.Human())
				if target > 0 && msg.Cycle >= target {
					return l.shutdown(sigs), nil
				}
			case messages.FamilyStopped:
				l.close()
				return msg, nil
			}
		case <-sigs:
			return l.shutdown(sigs), nil
		}
	}
}

func (d *demoCmd) sandbox() (string, error) {
	dir := d.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "singularity-demo-")
		if err != nil {
			return "", fault.Errorf(fault.ClassState, "sandbox: %w", err)
		}
		return tmp, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fault.Errorf(fault.ClassState, "sandbox: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fault.Errorf(fault.ClassState, "sandbox: %w", err)
	}
	return abs, nil
}

// configuration writes the demo's files (secret, Las pins, workspace) and
// validates a configuration for them exactly as `run` would.
func (d *demoCmd) configuration(sandbox, bramaURL string, secret []byte) (config.Runtime, error) {
	files := map[string][]byte{
		demoSecretFile:  secret,
		"manifest.json": []byte(`{"simulation":true}`),
		"manifest.sig":  []byte("simulation"),
		"trust.json":    []byte(`{"simulation":true}`),
		"example-las":   []byte("served by `singularity example-las`\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(sandbox, name), data, 0o600); err != nil {
			return config.Runtime{}, fault.Errorf(fault.ClassState, "sandbox: %w", err)
		}
	}
	workspace := filepath.Join(sandbox, "workspace")
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return config.Runtime{}, fault.Errorf(fault.ClassState, "sandbox: %w", err)
	}
	stateDir := filepath.Join(sandbox, "state")
	resume := false
	if _, err := os.Stat(filepath.Join(stateDir, "state.json")); err == nil {
		resume = true
	}
	required := config.DefaultRequiredSurfaces
	f := config.Flags{
		Identity: config.IdentityFlags{
			AgentID: "demo-ada", AgentName: "Ada", AgentTicker: "ADA", AgentType: "general", Specialty: "simulated market research",
			Role: "demo", Environment: "simulation", Host: "localhost", WorkloadID: "demo-workload",
			WorkloadPublicKey: demoHex, ExecutableSHA256: demoHex, CodeSHA256: demoHex, PolicySHA256: demoHex, PolicySequence: "1",
		},
		Loop: config.LoopFlags{
			StartingBalance: "1", InstancePerHour: "0.36", InputPerMillion: "0.15", OutputPerMillion: "0.6",
			CycleInterval: d.Interval, MaxToolRounds: "8", StateDir: stateDir, Workspace: workspace, Resume: resume,
			Stimulus:    "A simulated market opened nearby; local businesses want price surveys.",
			HTTPTimeout: "30", MCPTimeout: "30", ShutdownGrace: "5", ContextMessages: "200", CheckpointEvents: "256",
			ChildFunding: "transfer", MinCompletion: "256", PromptLayout: "seed",
		},
		Brama: config.BramaFlags{BaseURL: bramaURL, Model: "any", SecretFile: filepath.Join(sandbox, demoSecretFile), MaxTokens: "2048", Temperature: "0.2", CacheKey: true},
		Las: config.LasFlags{
			Command: "example-las", Entrypoint: filepath.Join(sandbox, "example-las"), Only: "echo,skarbiec,finance",
			Manifest: filepath.Join(sandbox, "manifest.json"), ManifestSig: filepath.Join(sandbox, "manifest.sig"),
			TrustStore: filepath.Join(sandbox, "trust.json"), Watermark: filepath.Join(sandbox, "watermark"),
			RequiredSurfaces: &required,
		},
		Most:            config.MostFlags{BaseURL: "http://127.0.0.1:8080"},
		DebugAddr:       d.DebugAddr,
		MetricsPerBeing: true,
	}
	return config.Load(f, func(string) (string, bool) { return "", false })
}

// summaryLegend is the line above the summary table that says what its
// columns hold.
const summaryLegend = "columns: cycles lived; in USD, rounded: starting balance, granted to children, balance, earned, net = earned - spent; cached: prompt tokens the simulated Brama served from its prompt cache"

// writeSummary prints summaryLegend, then each being of the family from
// its own state directory: cycles, starting balance, what it granted its
// children, balance, earned and net profit, rounded for reading
// (docs/money.md#shown-to-people), and the prompt tokens the simulated
// Brama served from its cache, summed over its journal; then the family
// ledger, computed exactly (docs/money.md#the-family-ledger).
func writeSummary(w io.Writer, rootDir string) error {
	fam, err := accounts.Read(rootDir)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, summaryLegend); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "being\tstatus\tcycles\tstarting\tgranted\tbalance\tearned\tnet\tcached\t")
	for _, b := range fam.Beings {
		st := b.State
		cached, err := cachedTokens(b.StateDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", strings.Repeat("  ", b.Depth), st.Identity.Name, st.Status, st.Cycle,
			st.Budget.Starting.Human(), st.Budget.Granted.Human(), st.Budget.Remaining.Human(), st.Budget.Earned.Human(), st.Budget.NetProfit().Human(), cached)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, "family ledger: "+fam.Verdict())
	return err
}

// cachedTokens sums the cached prompt tokens of a being's completions
// over its whole journal (docs/brama.md#cached-prompt-tokens).
func cachedTokens(dir string) (uint64, error) {
	events, err := state.ReadAll(dir)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, e := range events {
		if e.Type == state.EventModelCompleted {
			n = state.AddSaturating(n, e.Usage.CachedTokens)
		}
	}
	return n, nil
}
