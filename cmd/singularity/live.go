package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/actors/being"
	"github.com/wisent/singularity/actors/brama"
	"github.com/wisent/singularity/actors/family"
	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/control"
	"github.com/wisent/singularity/internal/debug"
	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/metrics"
	"github.com/wisent/singularity/internal/observe"
	"github.com/wisent/singularity/internal/store/accounts"
	"github.com/wisent/singularity/internal/store/budget"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/tools/most"
	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision/fault"
)

// modelMargin is added to the HTTP timeout for a being's wait on the
// gateway, so the gateway's own timeout (a classified error) wins.
const modelMargin = 5 * time.Second

// lasOptions maps the configuration onto the Las actor's options. A
// servers file without servers means no Las at all: nil
// (docs/las.md#several-mcp-servers).
func lasOptions(rt config.Runtime, log *slog.Logger) *las.Options {
	if rt.Las.ServersFile != "" && len(rt.Las.Servers) == 0 {
		return nil
	}
	only := rt.Las.Only
	var skip *string
	if rt.Las.Skip != "" {
		s := rt.Las.Skip
		skip = &s
	}
	return &las.Options{
		Keeper:                   lasKeeper(),
		Servers:                  lasServers(rt.Las.Servers),
		Workspace:                rt.Workspace,
		Secrets:                  secrets(rt),
		Command:                  rt.Las.Command,
		Entrypoint:               rt.Las.Entrypoint,
		Only:                     &only,
		Skip:                     skip,
		ReleaseManifest:          rt.Las.ReleaseManifest,
		ReleaseManifestSignature: rt.Las.ReleaseManifestSignature,
		ReleaseTrustStore:        rt.Las.ReleaseTrustStore,
		ReleaseWatermark:         rt.Las.ReleaseWatermark,
		AgentID:                  rt.Identity.AgentID,
		RequiredSurfaces:         rt.Las.RequiredSurfaces(),
		CallTimeout:              rt.MCPTimeout,
		ShutdownGrace:            rt.ShutdownGrace,
		Logger:                   log,
	}
}

// lasKeeper is the Las keeper: the dedicated singularity-keeper beside
// this binary, else this binary, which runs as the keeper when asked
// (keeper.Command; keeper.Path); "" when this binary cannot be found,
// and Las is started directly.
func lasKeeper() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return keeper.Path(self)
}

// lasServers maps the servers file's entries onto the Las servers; the
// secret values are revealed here, for the servers only.
func lasServers(servers []config.Server) []las.Server {
	var out []las.Server
	for _, s := range servers {
		ls := las.Server{Name: s.Name, Command: s.Command, Args: s.Args, Dir: s.Dir, URL: s.URL}
		for _, e := range s.Env {
			ls.Env = append(ls.Env, e.Name+"="+e.Reveal())
			if e.Secret.IsSet() {
				if ls.SecretEnv == nil {
					ls.SecretEnv = map[string]bool{}
				}
				ls.SecretEnv[e.Name] = true
			}
		}
		if len(s.Headers) > 0 {
			ls.Headers = make(map[string]string, len(s.Headers))
			for _, h := range s.Headers {
				ls.Headers[h.Name] = h.Reveal()
			}
		}
		out = append(out, ls)
	}
	return out
}

// secrets is every secret value of the configuration, for the output
// boundary and the logs (docs/tools.md#the-output-boundary).
func secrets(rt config.Runtime) *boundary.Secrets {
	var values [][]byte
	for _, s := range rt.Secrets() {
		if s.IsSet() {
			values = append(values, s.Reveal())
		}
	}
	return boundary.NewSecrets(values...)
}

// rootOptions maps the configuration onto the root being's options.
func rootOptions(rt config.Runtime, mode being.Mode, log *slog.Logger) (being.Options, error) {
	opts := being.Options{
		StateDir: rt.StateDir,
		Identity: rt.Identity,
		Mode:     mode,
		Model:    rt.Brama.Model,
		Pricing: budget.Pricing{
			InputPerMillion:  rt.InputPerMillion,
			OutputPerMillion: rt.OutputPerMillion,
			InstancePerHour:  rt.InstancePerHour,
		},
		StartingBalance:  rt.StartingBalance,
		FamilyTools:      rt.FamilyTools,
		Workspace:        rt.Workspace,
		MaxToolRounds:    rt.MaxToolRounds,
		ContextMessages:  rt.ContextMessages,
		PromptLayout:     rt.PromptLayout,
		Tiers:            rt.Tiers,
		CheckpointEvents: rt.CheckpointEvents,
		CycleInterval:    rt.CycleInterval,
		Stimulus:         rt.Stimulus,
		ModelTimeout:     rt.HTTPTimeout + rt.ShutdownGrace + modelMargin,
		MCPTimeout:       rt.MCPTimeout,
		ShutdownGrace:    rt.ShutdownGrace,
		Las:              lasOptions(rt, log),
		Secrets:          secrets(rt),
		Logger:           log,

		MaxTokens:           rt.Brama.MaxTokens,
		MinCompletionTokens: rt.MinCompletionTokens,
		HTTPTimeout:         rt.HTTPTimeout,
		SpendLimit:          rt.SpendLimit,
		Prices:              rt.Brama.Prices,
		RequirePrice:        rt.RequirePrice(),
	}
	if rt.MintChildren {
		opts.Funding = builtin.Mint
	}
	if rt.Most.Enabled() {
		opts.Most = mostClient(rt)
	}
	return opts, nil
}

// mostClient builds the Most client with the configured HTTP timeout.
func mostClient(rt config.Runtime) *most.Client {
	return most.New(rt.Most.BaseURL.String(), rt.Most.Token, &http.Client{Timeout: rt.HTTPTimeout})
}

// bramaClient builds the gateway client: signed for Brama, with a bearer
// key or none for any other OpenAI-compatible gateway.
func bramaClient(rt config.Runtime) (*brama.Client, error) {
	// NewClient's only failure is already a configuration error.
	return brama.NewClient(brama.ClientConfig{
		BaseURL:        rt.Brama.BaseURL.String(),
		Auth:           rt.Brama.Auth,
		Secret:         rt.Brama.Secret,
		APIKey:         rt.Brama.APIKey,
		MaxTokensField: rt.Brama.MaxTokensField,
		Retries:        rt.Brama.Retries,
		Timeout:        rt.HTTPTimeout,
		PromptCacheKey: rt.Brama.PromptCacheKey,
	})
}

// freshRoot is the state of a fresh root being: its persona's, with the
// configured system prompt when there is one.
func freshRoot(rt config.Runtime) *state.Being {
	b := being.NewState(rt.Identity, rt.StartingBalance, rt.Brama.Model, state.Now())
	if rt.SystemPrompt != "" {
		b.Mind.SystemPrompt = rt.SystemPrompt
	}
	return b
}

// bootRoot applies the boot gates of docs/state.md#boot-gates to the
// root's state directory without writing: a fresh being comes back for
// the root actor to write once its Las is ready (being.Options.Fresh),
// nil when the state is resumed. The identity is the root's: the
// configured one with the defaults of its open fields when fresh, the
// state's own when resumed (a generated agent id is kept, children
// inherit it). Refusals exit 4 and leave the directory untouched.
func bootRoot(rt config.Runtime) (*state.Being, state.Identity, error) {
	fresh := func() (*state.Being, error) {
		return freshRoot(rt), nil
	}
	b, resumed, err := state.CheckOpen(rt.StateDir, rt.Resume, rt.Identity, rt.IdentityOpen, fresh)
	switch {
	case err != nil:
		return nil, state.Identity{}, err
	case resumed:
		return nil, b.Identity, nil
	}
	return b, b.Identity, nil
}

// live is a running family: the actor system, the family actor, its
// events and the optional debug endpoint.
type live struct {
	system *actor.ActorSystem
	family *actor.PID
	// events are the family's news (family.Listen); nil when another
	// actor listens to the family (a member's membership actor, or,
	// spread, its placer).
	events     <-chan any
	stopEvents func()
	debug      *debug.Server
	log        *slog.Logger
	grace      time.Duration // the configured shutdown grace
	// writers is the family's pool for durable writes, closed last.
	writers *state.Writers
}

// startFamily claims the debug endpoint's port, boots the root's state,
// then spawns the actor tree and serves the debug endpoint.
func startFamily(e *env, rt config.Runtime, mode being.Mode) (*live, error) {
	rootOpts, err := rootOptions(rt, mode, e.log)
	if err != nil {
		return nil, err
	}
	return startFamilyWith(e, rt, rootOpts, held{})
}

// held is the member of a family across processes that holds the
// family, and its token; zero for a single process.
type held struct {
	member string
	token  uint64
	// committed reads a being's committed events for the debug routes.
	committed debug.Committed
	// show, set on a member, takes the family's debug routes for the
	// member's own endpoint and link (showcase.hold), which outlive the
	// hold; the family then opens no endpoint of its own.
	show func(cfg debug.HandlerConfig, token uint64)
	// placed runs the member's part of a family spread over members
	// (family.Options.Placed): no root of its own, the beings the
	// member activates.
	placed bool
	// limiter, when set, is the family's spend limiter instead of its
	// own (family.Options.LimiterProps).
	limiter *actor.Props
	// listener, when set, spawns the actor the family tells its news
	// (family.Options.Listener) on the family's actor system; without
	// it the command listens (live.events).
	listener func(*actor.ActorSystem) (*actor.PID, error)
	// relay carries a relative's message to the member that runs its
	// receiver (family.Options.Relay).
	relay func(dir string, req messages.MessageRequest, limit time.Duration) any
}

// startFamilyWith is startFamily with the root's options already made.
// Every check that can refuse the boot here (the Brama client, the tier
// models, the debug listener) runs before bootRoot, the first step that may write: a
// refused boot leaves no new file behind (docs/state.md#boot-gates).
func startFamilyWith(e *env, rt config.Runtime, rootOpts being.Options, by held) (*live, error) {
	client, err := bramaClient(rt)
	if err != nil {
		return nil, err
	}
	if err := bootTierModels(e.ctx, client, rt, e.log); err != nil {
		return nil, err
	}
	var dbg *debug.Server
	if rt.DebugAddr != "" && by.show == nil {
		// Bind now, serve once the family exists (the handler needs
		// its PID).
		dbg = debug.NewServer(debug.ServerConfig{Addr: rt.DebugAddr, AllowRemote: rt.DebugAllowRemote})
		if err := dbg.Listen(); err != nil {
			return nil, err
		}
	}
	release := func() {
		if dbg != nil {
			// Never served: this only closes the listener.
			_ = dbg.Shutdown(context.Background())
		}
	}
	var (
		fresh *state.Being
		id    state.Identity
	)
	if rootOpts.Placement != nil || by.placed {
		// A member holding a clustered family: the root's first state is
		// written (clusterBoot), and each being loads through the hold.
		id, err = clusterIdentity(rt)
	} else {
		fresh, id, err = bootRoot(rt)
	}
	if err != nil {
		release()
		return nil, err
	}
	rootOpts.Fresh = fresh
	rootOpts.Identity = id
	// The family's observers (docs/debug.md#metrics,
	// docs/configuration.md#logging): the metrics when the debug endpoint
	// serves them, the narrative log always, and whatever the command
	// added (the demo's event lines).
	var reg *metrics.Metrics
	if rt.DebugAddr != "" {
		reg = metrics.New(metrics.Options{PerBeing: rt.MetricsPerBeing, Process: true, Models: rt.Brama.Models(), Member: by.member})
		reg.SetBuild(buildInfo().metrics())
		rootOpts.Observer = observe.Tee(reg, rootOpts.Observer)
	}
	rootOpts.Observer = observe.Tee(logging.NewNarrator(e.log), rootOpts.Observer)
	writers := state.NewWriters(state.DefaultWriters)
	rootOpts.Writers = writers
	quiet := logging.AtLeast(e.log.With("lib", "protoactor"), slog.LevelWarn)
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	var (
		listener   *actor.PID
		events     <-chan any
		stopEvents func()
	)
	if by.listener != nil {
		listener, err = by.listener(system)
		if err != nil {
			release()
			system.Shutdown()
			writers.Close()
			return nil, fault.Errorf(fault.ClassRuntime, "spawn the family's listener: %w", err)
		}
	} else {
		listener, events, stopEvents = family.Listen(system)
	}
	opts := family.Options{
		Gateway: brama.GatewayConfig{
			Client:        client,
			MaxTokens:     rt.Brama.MaxTokens,
			Temperature:   rt.Brama.Temperature,
			ShutdownGrace: rt.ShutdownGrace,
			Prices:        rt.Brama.Prices,
			Logger:        e.log,
		},
		Root:     rootOpts,
		Listener: listener,
		Logger:   e.log,
		// One limiter admits every being's reservations when any
		// spend limit is set (docs/money.md#spend-limits).
		SpendLimits:      rt.SpendLimit != nil || rt.FamilySpendLimit != nil,
		FamilySpendLimit: rt.FamilySpendLimit,
		Member:           by.member,
		Token:            by.token,
		Placed:           by.placed,
		LimiterProps:     by.limiter,
		Relay:            by.relay,
	}
	pid, err := system.Root.SpawnNamed(family.Props(opts), "family")
	if err != nil {
		release()
		if stopEvents != nil {
			stopEvents()
		}
		system.Shutdown()
		writers.Close()
		return nil, fault.Errorf(fault.ClassRuntime, "spawn family: %w", err)
	}
	l := &live{system: system, family: pid, events: events, stopEvents: stopEvents, debug: dbg, log: e.log, grace: rt.ShutdownGrace, writers: writers}
	cfg := debug.HandlerConfig{Root: system.Root, PID: pid, StateDir: rt.StateDir, Committed: by.committed, Member: by.member, Secrets: e.secrets}
	if reg != nil {
		cfg.Metrics = reg.Handler()
	}
	if by.show != nil {
		by.show(cfg, by.token)
	}
	if dbg != nil {
		if err := dbg.Serve(debug.Handler(cfg)); err != nil {
			l.stopNow()
			return nil, err
		}
		e.log.Info("debug endpoint listening", "url", "http://"+dbg.Addr().String()+"/debug/")
	}
	return l, nil
}

// shutdown asks the family to stop (children first) and waits for its
// last word. A second signal hurries it, and so does the stop deadline
// (twice the shutdown grace plus a margin); if even the hurried family
// does not finish within stopLimit more, the process gives up with an
// error rather than hang.
func (l *live) shutdown(sigs <-chan os.Signal) messages.FamilyStopped {
	l.system.Root.Send(l.family, messages.ShutdownFamily{})
	hurry := time.NewTimer(2*l.grace + stopLimit)
	defer hurry.Stop()
	var giveUp <-chan time.Time
	hurried := func(why string) {
		l.log.Warn(why + ": stopping without waiting")
		l.system.Root.Send(l.family, messages.ShutdownFamily{Now: true})
		if giveUp == nil {
			giveUp = time.After(stopLimit)
		}
	}
	for {
		select {
		case ev := <-l.events:
			if stopped, ok := ev.(messages.FamilyStopped); ok {
				l.close()
				return stopped
			}
		case <-sigs:
			hurried("second signal")
		case <-hurry.C:
			hurried("the family did not stop within its shutdown grace")
		case <-giveUp:
			l.close()
			return messages.FamilyStopped{Status: state.StatusFailed, Err: fault.New(fault.ClassRuntime, "the family did not stop in time")}
		}
	}
}

// stopLimit bounds each stage of the shutdown wait beyond the grace.
const stopLimit = 30 * time.Second

func (l *live) stopNow() {
	l.system.Root.Stop(l.family)
	l.close()
}

func (l *live) close() {
	if l.debug != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.debug.Shutdown(ctx)
		cancel()
	}
	if l.stopEvents != nil {
		l.stopEvents()
	}
	l.system.Shutdown()
	if l.writers != nil {
		l.writers.Close()
	}
}

// notifySignals returns a channel of SIGINT and SIGTERM and its stop.
func notifySignals() (chan os.Signal, func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return sigs, func() { signal.Stop(sigs) }
}

// cycleReport is the JSON shape of docs/cycle.md#the-cycle-report.
type cycleReport struct {
	Cycle        uint64   `json:"cycle"`
	Status       string   `json:"status"`
	FinalContent *string  `json:"final_content"`
	BalanceUSD   string   `json:"balance_usd"`
	EarnedUSD    string   `json:"earned_usd"`
	NetProfitUSD string   `json:"net_profit_usd"`
	TotalTokens  uint64   `json:"total_tokens"`
	Actions      []string `json:"actions"`
}

func reportJSON(r messages.CycleReport) ([]byte, error) {
	actions := r.Actions
	if actions == nil {
		actions = []string{}
	}
	return json.MarshalIndent(cycleReport{
		Cycle: r.Cycle, Status: r.Status, FinalContent: r.FinalContent,
		BalanceUSD: r.Balance.String(), EarnedUSD: r.Earned.String(), NetProfitUSD: r.NetProfit.String(),
		TotalTokens: r.TotalTokens, Actions: actions,
	}, "", "  ")
}

// runOnce is `once`: one cycle of the root being, the report on stdout,
// then shutdown; the first error of the cycle is returned after state and
// journal are durable.
func runOnce(e *env, rt config.Runtime) error {
	sigs, stop := notifySignals()
	defer stop()
	l, err := startFamily(e, rt, being.Once)
	if err != nil {
		return err
	}
	for {
		select {
		case ev := <-l.events:
			switch msg := ev.(type) {
			case messages.CycleReport:
				stopped := l.shutdown(sigs)
				if msg.Err != nil {
					return msg.Err
				}
				out, err := reportJSON(msg)
				if err != nil {
					return fault.Errorf(fault.ClassRuntime, "report: %w", err)
				}
				fmt.Fprintln(e.stdout, string(out))
				return stopped.Err
			case messages.FamilyStopped:
				l.close()
				if msg.Err != nil {
					return msg.Err
				}
				return fault.New(fault.ClassRuntime, "the being stopped before its cycle ended")
			}
		case <-sigs:
			stopped := l.shutdown(sigs)
			return stopped.Err
		}
	}
}

// runLive is `run`: the family lives until a signal, the root's
// exhaustion, or a permanent failure (exit 3).
func runLive(e *env, rt config.Runtime) error {
	sigs, stop := notifySignals()
	defer stop()
	l, err := startFamily(e, rt, being.Run)
	if err != nil {
		return err
	}
	// The control socket opens once the root has booted: its directory
	// exists, and this runtime holds its lock.
	var ctl *control.Server
	closeControl := func() {
		if ctl != nil {
			ctl.Close()
		}
	}
	for {
		select {
		case ev := <-l.events:
			if msg, ok := ev.(messages.BeingStarted); ok && ctl == nil && filepath.Clean(msg.Dir) == filepath.Clean(rt.StateDir) {
				if ctl, err = serveControl(l, rt.StateDir, e.secrets); err != nil {
					l.log.Warn("no control socket: fund and say wait for the family to stop", "err", err)
				}
			}
			if msg, ok := ev.(messages.FamilyStopped); ok {
				closeControl()
				l.close()
				writeRunSummary(e, rt.StateDir, msg)
				if msg.Status == state.StatusFailed && msg.Err != nil {
					return msg.Err
				}
				return nil
			}
		case <-sigs:
			l.log.Info("signal received: stopping the family, children first")
			closeControl()
			stopped := l.shutdown(sigs)
			writeRunSummary(e, rt.StateDir, stopped)
			if stopped.Status == state.StatusFailed && stopped.Err != nil {
				return stopped.Err
			}
			return nil
		}
	}
}

// writeRunSummary ends run with one line per being of the family on
// stderr, read from its state directories as status reads them
// (docs/cycle.md#the-end-of-run). A family that cannot be read is said
// in one line instead.
func writeRunSummary(e *env, stateDir string, root messages.FamilyStopped) {
	summarizeWithin(e, "run ended:", summaryWait, func(w io.Writer) {
		fam, err := accounts.Read(stateDir)
		if err != nil {
			fmt.Fprintln(w, e.secrets.RedactString("run ended; the family cannot be read: "+err.Error()))
			return
		}
		writeEndSummary(w, e.secrets, "run ended:", fam.Beings, &root)
	})
}

// summaryWait bounds how long the end of run, or of a member, waits for
// its summary: a family too large, or storage too slow, to be read in
// time is said in one line, and the process ends without it.
const summaryWait = 10 * time.Second

// summarizeWithin has write print a summary into a buffer, and copies
// it to stderr once written; past wait it says in one line, headed
// title, that the summary was not read, and returns.
func summarizeWithin(e *env, title string, wait time.Duration, write func(w io.Writer)) {
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(&buf)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-done:
		_, _ = e.stderr.Write(buf.Bytes())
	case <-timer.C:
		fmt.Fprintf(e.stderr, "%s the family was not read within %s; singularity status reads it\n", title, wait)
	}
}

// writeEndSummary writes title and one line per being to w
// (docs/cycle.md#the-end-of-run): its status, why its life ended, its
// cycles and its money, exact, children indented under their parent.
// The root's status and reason are those its end reported (root, when
// set and beings begin with the root), which storage that failed may
// not hold. Secrets are redacted.
func writeEndSummary(w io.Writer, secrets *boundary.Secrets, title string, beings []accounts.Being, root *messages.FamilyStopped) {
	var b strings.Builder
	b.WriteString(title + "\n")
	for i, being := range beings {
		st := being.State
		status, reason := st.Status, st.StatusReason
		if i == 0 && being.Depth == 0 && root != nil && root.Status != "" && (root.Status != status || (reason == "" && root.Err != nil)) {
			status, reason = root.Status, ""
			if root.Err != nil {
				reason = root.Err.Error()
			}
		}
		if reason != "" {
			status += " (" + reason + ")"
		}
		fmt.Fprintf(&b, "  %s%s: %s, %d cycles, spent %s, earned %s, remaining %s USD\n",
			strings.Repeat("  ", being.Depth), being.Name, status, st.Cycle, spent(being), st.Budget.Earned, st.Budget.Remaining)
	}
	fmt.Fprint(w, secrets.RedactString(b.String()))
}
