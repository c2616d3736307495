package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// The configuration file (docs/configuration.md#the-configuration-file)
// reaches kong as a resolver: a flag the command line does not give and
// whose environment variable is unset takes the file's value, so the
// precedence is flag, environment, file, default.

// configEnv is the environment variable of --config.
const configEnv = "SINGULARITY_CONFIG"

// hereFile is the configuration file a command reads from the
// directory it runs in when neither --config nor SINGULARITY_CONFIG names
// one (docs/configuration.md#the-configuration-file).
const hereFile = "singularity.toml"

// noConfiguration is the refusal of a command that needs a configuration
// and has none: no file named or found here, and nothing that the
// environment-only path needs.
var noConfiguration = fault.Errorf(fault.ClassConfiguration, "no configuration found here: run singularity init, or pass --config FILE")

// configPath is the configuration file the command line or the
// environment names: --config FILE or --config=FILE before a "--", else
// SINGULARITY_CONFIG (set to "" it names none); else ./singularity.toml,
// as an absolute path, when it exists and the command reads one (found
// reports this case); "" for none.
func configPath(args []string, lookupEnv func(string) (string, bool), commands map[string]bool) (path string, found bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v, false
		}
		if a == "--config" && i+1 < len(args) {
			return args[i+1], false
		}
	}
	if v, set := lookupEnv(configEnv); set {
		return v, false
	}
	if !readsHere(args, commands) {
		return "", false
	}
	if _, err := os.Stat(hereFile); err != nil {
		return "", false
	}
	if abs, err := filepath.Abs(hereFile); err == nil {
		return abs, true
	}
	return hereFile, true
}

// readsHere reports whether the command args name reads the
// configuration file found in the directory it runs in: every command of
// commands but init (which writes one), demo (a world of its own) and
// the hidden example-las. The command is the first argument that is
// neither a flag nor the value of a global flag.
func readsHere(args []string, commands map[string]bool) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case a == "--log-level" || a == "--log-format" || a == "--config":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return commands[a] && a != "init" && a != "demo" && a != "example-las"
		}
	}
	return false
}

// commandNames are the names of app's commands.
func commandNames(app *kong.Application) map[string]bool {
	names := map[string]bool{}
	for _, c := range app.Children {
		names[c.Name] = true
	}
	return names
}

// optionKeys are the keys a configuration file may hold: the long name
// of every flag, of any command, that has an environment variable (the
// configuration's options; command arguments such as --format have
// none), but --config itself.
func optionKeys(app *kong.Application) map[string]bool {
	keys := map[string]bool{}
	_ = kong.Visit(app.Node, func(v kong.Visitable, next kong.Next) error {
		if n, ok := v.(*kong.Node); ok {
			for _, f := range n.Flags {
				if len(f.Envs) > 0 && f.Name != "config" {
					keys[f.Name] = true
				}
			}
		}
		return next(nil)
	})
	return keys
}

// fileResolver resolves flags from a configuration file.
type fileResolver struct {
	file      *config.File
	lookupEnv func(string) (string, bool)
}

func (fileResolver) Validate(*kong.Application) error { return nil }

// Resolve is the file's value of flag, unless one of the flag's
// environment variables is set (the environment comes first).
func (r fileResolver) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	v, ok := r.file.Values[flag.Name]
	if !ok {
		return nil, nil
	}
	for _, env := range flag.Envs {
		if _, set := r.lookupEnv(env); set {
			return nil, nil
		}
	}
	return v, nil
}

// redactedPath stands in `config` for a secret file's path that may be
// the key itself (config.HidesSecretPath).
const redactedPath = "[redacted: no such file]"

// namesSecretFile reports whether f is an option naming a secret file.
func namesSecretFile(f *kong.Flag) bool {
	for _, env := range f.Envs {
		if slices.Contains(config.SecretFileVariables, env) {
			return true
		}
	}
	return false
}

// configCmd prints the effective configuration.
type configCmd struct {
	config.Flags `embed:""`
}

// Run prints every option of the configuration as a TOML line, in the
// flags' order, with the place its value came from: "flag", "env
// <VARIABLE>", "file <path>" or "default". Values are the options' own:
// secrets live in files, and the file options hold only their paths; a
// secret file's path that does not exist and looks like a key is shown
// as redactedPath.
func (c *configCmd) Run(e *env) error {
	fmt.Fprintln(e.stdout, "# the effective configuration: a flag, else its environment variable, else the configuration file, else the default")
	kept := keptOnResume(c.Loop.StateDir)
	if kept != nil {
		fmt.Fprintf(e.stdout, "# %s holds a being: resumed, it keeps what its state says for the options marked \"kept\"\n", c.Loop.StateDir)
	}
	for _, group := range e.kctx.Selected().AllFlags(true) {
		for _, f := range group {
			if len(f.Envs) == 0 || f.Name == "config" {
				continue
			}
			value := fmt.Sprint(e.kctx.FlagValue(f))
			if b, ok := e.kctx.FlagValue(f).(bool); ok {
				value = strconv.FormatBool(b)
			} else if namesSecretFile(f) && config.HidesSecretPath(value) {
				value = strconv.Quote(redactedPath)
			} else {
				value = strconv.Quote(value)
			}
			mark := ""
			if v, ok := kept[f.Name]; ok && f.Name == "stimulus" {
				mark = "; kept: only a fresh being's first cycle reads it"
			} else if ok && f.Name == "system-prompt" {
				mark = "; kept: the state holds its own prompt"
			} else if ok {
				mark = "; kept: the state says " + strconv.Quote(v)
			}
			fmt.Fprintf(e.stdout, "%s = %s # %s%s\n", f.Name, value, e.source(f), mark)
		}
	}
	return nil
}

// keptOnResume maps each option a resumed being takes from its state
// rather than from the configuration to the value its state holds: the
// identity (docs/state.md#identity: a value that is set must match it),
// the model it thinks with, its starting balance, its system prompt and
// the stimulus of its first cycle (none after it). Nil when dir holds no readable state.
func keptOnResume(dir string) map[string]string {
	st, err := state.Load(dir)
	if err != nil {
		return nil
	}
	id := st.Identity
	return map[string]string{
		"agent-id": id.AgentID, "agent-name": id.Name, "agent-ticker": id.Ticker,
		"agent-type": id.AgentType, "specialty": id.Specialty, "role": id.Role,
		"environment": id.Environment, "host": id.Host, "workload-id": id.WorkloadID,
		"workload-public-key": id.WorkloadPublicKey, "executable-sha256": id.ExecutableDigest,
		"code-sha256": id.CodeDigest, "policy-sha256": id.PolicyDigest,
		"policy-sequence":      strconv.FormatUint(id.PolicySequence, 10),
		"brama-model":          st.Mind.CurrentModel,
		"starting-balance-usd": st.Budget.Starting.String(),
		"stimulus":             "",
		"system-prompt":        "",
	}
}

// sourceOf is source for the flag of the selected command named name
// ("unset" when it has none).
func (e *env) sourceOf(name string) string {
	for _, group := range e.kctx.Selected().AllFlags(false) {
		for _, f := range group {
			if f.Name == name {
				return e.source(f)
			}
		}
	}
	return "unset"
}

// source says where flag's value came from: "flag", "file <path>",
// "env <VARIABLE>", "default" or "unset".
func (e *env) source(f *kong.Flag) string {
	for _, p := range e.kctx.Path {
		if p.Flag == f {
			if p.Resolved {
				return "file " + e.file.Path
			}
			return "flag"
		}
	}
	for _, name := range f.Envs {
		if _, set := e.lookupEnv(name); set {
			return "env " + name
		}
	}
	if f.HasDefault {
		return "default"
	}
	return "unset"
}

// unconfigured reports whether a command that boots a being has no
// configuration at all: no file named or found here, the default
// authentication (hmac, the seed's), and no identity option given by
// flag or environment. The seed's environment-only path sets its
// identity variables, so it never is.
func (e *env) unconfigured() bool {
	if e.file != nil || e.sourceOf("brama-auth") != "default" {
		return false
	}
	for _, group := range e.kctx.Selected().AllFlags(false) {
		for _, f := range group {
			if f.Group != nil && f.Group.Title == "Identity" && e.source(f) != "default" && e.source(f) != "unset" {
				return false
			}
		}
	}
	return true
}

// checkStateDir refuses a reading command (status, journal) that has
// no configuration: no file named or found here, no state directory
// given by flag or environment, and no state directory at the default
// place. Otherwise the state directory is the one to read.
func (e *env) checkStateDir(dir string) error {
	if e.file != nil || e.sourceOf("state-dir") != "default" {
		return nil
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return noConfiguration
	}
	return nil
}

// placed is a refusal of one option's value (config.OptionError) with
// the option and where its value came from in front of the sentence:
// "--<flag>: " for the command line, "<VARIABLE>: " for the environment,
// "<file>:<line>: <key>: " for the configuration file, "default <key>: "
// for the default; the environment and the default add nothing to a
// sentence that names the variable already. Any other error is returned
// as it is.
func (e *env) placed(err error) error {
	var oe *config.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	f := e.flagOf(oe.Variable)
	if f == nil {
		return err
	}
	var where string
	named := strings.Contains(oe.Error(), oe.Variable)
	switch source := e.source(f); {
	case source == "flag":
		where = "--" + f.Name
	case strings.HasPrefix(source, "env ") && !named:
		where = oe.Variable
	case strings.HasPrefix(source, "file "):
		where = e.file.Where(f.Name) + ": " + f.Name
	case source == "default" && !named:
		where = "default " + f.Name
	default:
		return err
	}
	return fault.Errorf(fault.ClassConfiguration, "%s: %w", where, oe.Err)
}

// flagOf is the selected command's flag bound to the environment
// variable name, nil for none.
func (e *env) flagOf(variable string) *kong.Flag {
	for _, group := range e.kctx.Selected().AllFlags(true) {
		for _, f := range group {
			if slices.Contains(f.Envs, variable) {
				return f
			}
		}
	}
	return nil
}
