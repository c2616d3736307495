// Command singularity runs a family of autonomous digital beings: each
// lives cycle by cycle, thinks through Brama, acts through Las, and pays for
// every model call from an exact-decimal budget (see README.md).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/alecthomas/kong"

	"github.com/wisent/singularity/actors/las"
	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/keeper"
	"github.com/wisent/singularity/internal/logging"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/supervision/fault"
)

// cli is the whole command line. Every subcommand that boots a being embeds
// config.Flags so its --help lists every variable of
// docs/configuration.md#variables.
type cli struct {
	Log        config.LogFlags  `embed:""`
	Version    kong.VersionFlag `name:"version" help:"Print the version and the VCS revision, then exit."`
	ConfigFile string           `name:"config" env:"SINGULARITY_CONFIG" placeholder:"FILE" help:"TOML configuration file: any option by its flag's long name (a flag and the environment come first)."`

	Run     runCmd     `cmd:"" help:"Boot the family and live until Ctrl-C or SIGTERM."`
	Once    onceCmd    `cmd:"" help:"Run exactly one cycle of the root being and print its report."`
	Doctor  doctorCmd  `cmd:"" help:"Read-only preflight of Brama, Most and Las; writes no state."`
	Tools   toolsCmd   `cmd:"" help:"Print the tool catalogue the model would see."`
	Demo    demoCmd    `cmd:"" help:"Run the embedded demo world: a simulated Brama, the example Las, a whole family (a simulation)."`
	Journal journalCmd `cmd:"" help:"Print the family's journal events in time order, one line each; --follow keeps printing (read-only)."`
	Status  statusCmd  `cmd:"" help:"Print the family's tree and ledger from its state directories; read-only, safe while run runs."`
	Config  configCmd  `cmd:"" help:"Print the effective configuration, each value with where it came from; secrets are never shown."`
	Init    initCmd    `cmd:"" help:"Write a standalone being into DIR: a commented configuration, a servers file, prices and a workspace."`
	Prices  pricesCmd  `cmd:"" help:"Print what a model is charged per million tokens, and from where: the prices file, the catalogue or the price options."`
	Fund    fundCmd    `cmd:"" help:"Add USD to a being from outside the family; answers once it is durable."`
	Say     sayCmd     `cmd:"" help:"Send the operator's message to a being; its next cycle's framing carries it."`

	ExampleLas exampleLasCmd `cmd:"" name:"example-las" hidden:"" help:"Serve the example Las over stdio (used by demo)."`
}

// env is what every command receives: the process's output streams, a
// logger, and a context cancelled by the first SIGINT or SIGTERM.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	// kctx is the parsed command line, file the configuration file it
	// read (nil for none) and lookupEnv the process environment: what
	// `singularity config` reports sources from.
	kctx      *kong.Context
	file      *config.File
	lookupEnv func(string) (string, bool)
	// secrets are the configuration's secret values once it is loaded
	// (nil before): redacted from the log and from the error sentence
	// (docs/configuration.md#secret-files).
	secrets *boundary.Secrets
}

// holdSecrets makes secrets the command's: every line e.log writes, and
// the sentence of the error it ends with, has them redacted.
func (e *env) holdSecrets(secrets *boundary.Secrets) {
	e.secrets = secrets
	e.log = logging.Redacting(e.log, secrets)
}

// exitRequest carries kong's exit code (after --help) out of Parse.
type exitRequest struct{ code int }

func main() {
	if len(os.Args) > 1 && os.Args[1] == keeper.Command {
		os.Exit(keeper.Run(os.Args[2:]))
	}
	if len(os.Args) < 2 || os.Args[1] != "example-las" {
		// The runtime adopts what its Las processes leave behind, to end
		// it when they stop (docs/las.md#leftovers); where the kernel
		// refuses, the process-group ladder still applies.
		_ = las.BecomeSubreaper()
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the command line args and returns the process exit code. Any
// failure is printed as one line, "singularity: <error>", on stderr.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("singularity"),
		kong.Description("Runtime for autonomous digital beings: a protoactor supervisor tree of beings, their ledgers, their Las skill processes and the Brama gateway."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.Vars{"las_only": las.DefaultOnly, "version": version()},
	)
	if err != nil {
		fmt.Fprintln(stderr, fault.Line(fault.Errorf(fault.ClassRuntime, "command line: %w", err)))
		return 5
	}
	defer func() {
		if r := recover(); r != nil {
			exit, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = exit.code
		}
	}()
	var file *config.File
	path, found := configPath(args, os.LookupEnv, commandNames(parser.Model))
	if path != "" {
		if file, err = config.ReadFile(path, optionKeys(parser.Model)); err != nil {
			fmt.Fprintln(stderr, fault.Line(err))
			return 2
		}
		_ = kong.Resolvers(fileResolver{file: file, lookupEnv: os.LookupEnv}).Apply(parser)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, fault.Line(fault.Errorf(fault.ClassConfiguration, "%w", err)))
		return 2
	}
	e := &env{stdout: stdout, stderr: stderr, kctx: kctx, file: file, lookupEnv: os.LookupEnv}
	level := c.Log.Level
	if kctx.Command() == "demo" && e.sourceOf("log-level") == "default" {
		// The demo shows its event lines and summary on stdout; its logs
		// are at warn unless asked for (docs/demo.md).
		level = "warn"
	}
	log, err := logging.New(stderr, level, c.Log.Format)
	if err != nil {
		fmt.Fprintln(stderr, fault.Line(fault.Errorf(fault.ClassConfiguration, "%w", err)))
		return 2
	}
	ctx, stop := signalContext(context.Background())
	defer stop()
	e.ctx, e.log = ctx, log
	if found {
		log.Info("configuration: reading the file found here; --config FILE or SINGULARITY_CONFIG names another", "file", path)
	}
	err = kctx.Run(e)
	if err != nil {
		fmt.Fprintln(stderr, e.secrets.RedactString(fault.Line(err)))
		return fault.ExitCode(err)
	}
	return 0
}

// loadConfig validates the flags against the process environment; the
// configuration's secrets are the command's from then on (holdSecrets).
func (e *env) loadConfig(f config.Flags) (config.Runtime, error) {
	if e.unconfigured() {
		return config.Runtime{}, noConfiguration
	}
	if f.Loop.Resume && e.sourceOf("starting-balance-usd") == "flag" {
		// A resumed being keeps its balance; money comes in by a fund
		// (docs/money.md#funding).
		return config.Runtime{}, fault.New(fault.ClassConfiguration,
			"--starting-balance-usd is not taken on --resume: a resumed being keeps its balance; add money with `singularity fund AMOUNT`")
	}
	rt, err := config.Load(f, os.LookupEnv)
	if err == nil {
		e.holdSecrets(secrets(rt))
	}
	return rt, e.placed(err)
}

type runCmd struct {
	config.Flags `embed:""`
	Cluster      config.ClusterFlags `embed:"" group:"Cluster"`
}

func (r *runCmd) Run(e *env) error {
	rt, err := e.loadConfig(r.Flags)
	if err != nil {
		return err
	}
	cl, err := config.LoadCluster(r.Cluster, os.Hostname)
	if err != nil {
		return err
	}
	if cl.Enabled {
		return runMember(e, rt, cl)
	}
	return runLive(e, rt)
}

type onceCmd struct {
	config.Flags `embed:""`
}

func (o *onceCmd) Run(e *env) error {
	rt, err := e.loadConfig(o.Flags)
	if err != nil {
		return err
	}
	return runOnce(e, rt)
}

type doctorCmd struct {
	config.Flags `embed:""`
	Format       string `name:"format" default:"json" enum:"json,text" help:"Output format: json (one line) or text (one line per check)."`
}

func (d *doctorCmd) Run(e *env) error {
	rt, err := e.loadConfig(d.Flags)
	if err != nil {
		return err
	}
	return runDoctor(e, rt, d.Format)
}

type toolsCmd struct {
	AgentID string `name:"agent-id" env:"SINGULARITY_AGENT_ID" help:"Agent identity passed to Las (required when surface skarbiec is selected)."`
	Format  string `name:"format" default:"json" enum:"json,table" help:"Output format: json (full definitions) or table (name<TAB>description)."`
	// Workspace is the root answered to roots/list, as in run.
	Workspace string          `name:"workspace" env:"SINGULARITY_WORKSPACE" default:"." help:"Workspace given to MCP servers as their root."`
	Las       config.LasFlags `embed:"" group:"Las"`
	// FamilyTools lists the two family tools after the nine built-ins,
	// as a being run with it has them.
	FamilyTools bool `name:"family-tools" env:"SINGULARITY_FAMILY_TOOLS" help:"List the family tools (singularity_message_send, singularity_self_sleep), as beings run with --family-tools have them."`
}

func (t *toolsCmd) Run(e *env) error {
	if e.file == nil && e.sourceOf("las-servers-file") == "unset" && e.sourceOf("las-mcp-entrypoint") == "default" {
		// Neither a servers file nor the seed's Las beside the runtime.
		if _, err := os.Stat(t.Las.Entrypoint); err != nil {
			return noConfiguration
		}
	}
	return runTools(e, t)
}
