package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/alecthomas/kong"
	"golang.org/x/sys/unix"

	"github.com/wisent/singularity/config"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/prices/catalog"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/supervision/fault"
)

// initCmd writes a standalone being's directory
// (docs/configuration.md#init): a commented configuration
// file, a servers file, a prices file and an empty workspace, for any
// OpenAI-compatible provider, with no Wisent identity.
type initCmd struct {
	Dir     string    `arg:"" optional:"" default:"." help:"Directory to write into (made if missing)."`
	BaseURL string    `name:"base-url" help:"The provider's OpenAI-compatible base URL (for example https://api.openai.com/v1)."`
	Model   string    `name:"model" help:"The model id to think with."`
	Auth    string    `name:"auth" help:"bearer (an API key) or none (a keyless local server); default bearer."`
	KeyFile string    `name:"key-file" help:"File holding the API key (bearer); the configuration names it, never the key."`
	Prices  pricePair `name:"prices" placeholder:"IN,OUT" help:"INPUT,OUTPUT: the model's USD per million prompt and completion tokens (default: the catalogue's; required for a model it does not know)."`
	Name    string    `name:"name" help:"The being's name (default: the directory's name, capitalised)."`
	Balance string    `name:"starting-balance" placeholder:"USD" help:"The being's starting balance in USD (default 10)."`
	Prompt  string    `name:"prompt" help:"The being's first words: its system prompt (default: the built-in one for its name)."`
}

// pricePair is init's --prices. It takes the argument after the flag
// even when that starts with a hyphen, as a negative price does
// ("--prices -1,1"), so that its refusal is about the prices, not a
// short flag of the parser's; only a long flag ("--model") is never
// taken for it.
type pricePair string

// Decode takes the value of --prices.
func (p *pricePair) Decode(ctx *kong.DecodeContext) error {
	t := ctx.Scan.Pop()
	text, ok := t.Value.(string)
	if t.IsEOL() || !ok || (t.InferredType() == kong.FlagToken && t.Type != kong.FlagValueToken) {
		return errors.New("must be INPUT,OUTPUT (USD per million tokens)")
	}
	*p = pricePair(text)
	return nil
}

// filesystemServer is the example MCP server the servers file starts:
// the filesystem server of the MCP project, confined to the workspace,
// pinned to the version test/peers runs.
const filesystemServer = "@modelcontextprotocol/server-filesystem@2026.8.31"

// memoryServer is the example knowledge-graph server: the memory server
// of the MCP project, at the version test/peers runs. Each being keeps
// its graph in its own state directory (docs/las.md#per-being-values).
const memoryServer = "@modelcontextprotocol/server-memory@2026.8.31"

// initAnswers are init's inputs once every one is known.
type initAnswers struct {
	dir, baseURL, model, auth, keyFile string
	// price is the model's entry of prices.json; priceFrom says where
	// it came from, for the report.
	price                 map[string]string
	priceFrom             string
	name, balance, prompt string
}

func (c *initCmd) Run(e *env) error {
	a, err := c.answers(os.Stdin, e.stdout, isTerminal(os.Stdin))
	if err != nil {
		return err
	}
	files, err := a.files()
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := os.Lstat(f.path); err == nil {
			return fault.Errorf(fault.ClassConfiguration, "init: %s already exists; nothing was written", f.path)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fault.Errorf(fault.ClassConfiguration, "init: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(a.dir, "workspace"), 0o700); err != nil {
		return fault.Errorf(fault.ClassConfiguration, "init: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return fault.Errorf(fault.ClassConfiguration, "init: %w", err)
		}
	}
	cfg := filepath.Join(a.dir, "singularity.toml")
	fmt.Fprintf(e.stdout, "wrote %s, %s, %s and %s\n", cfg,
		filepath.Join(a.dir, "servers.json"), filepath.Join(a.dir, "prices.json"), filepath.Join(a.dir, "workspace")+string(filepath.Separator))
	fmt.Fprintf(e.stdout, "prices of %s: %s\n", a.model, a.priceFrom)
	fmt.Fprintf(e.stdout, "next: cd %s\n      singularity doctor\n      singularity run\n", a.dir)
	return nil
}

// answers fills what the flags left out: from the terminal when there is
// one, else it refuses.
func (c *initCmd) answers(in io.Reader, out io.Writer, terminal bool) (initAnswers, error) {
	a := initAnswers{baseURL: c.BaseURL, model: c.Model, auth: c.Auth, keyFile: c.KeyFile, name: c.Name, balance: c.Balance, prompt: c.Prompt}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return a, fault.Errorf(fault.ClassConfiguration, "init: %w", err)
	}
	a.dir = dir
	lines := bufio.NewScanner(in)
	ask := func(value *string, flag, question, fallback string) error {
		if *value != "" {
			return nil
		}
		if !terminal {
			if fallback != "" {
				*value = fallback
				return nil
			}
			return fault.Errorf(fault.ClassConfiguration, "init: --%s is required when stdin is not a terminal", flag)
		}
		if fallback != "" {
			fmt.Fprintf(out, "%s [%s]: ", question, fallback)
		} else {
			fmt.Fprintf(out, "%s: ", question)
		}
		if lines.Scan() {
			*value = strings.TrimSpace(lines.Text())
		}
		if *value == "" {
			*value = fallback
		}
		if *value == "" {
			return fault.Errorf(fault.ClassConfiguration, "init: --%s is required", flag)
		}
		return nil
	}
	if err := ask(&a.name, "name", "The being's name", defaultName(dir)); err != nil {
		return a, err
	}
	if strings.ContainsAny(a.name, "\x00\r\n") {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --name must be one line")
	}
	if err := ask(&a.balance, "starting-balance", "Its starting balance in USD", "10"); err != nil {
		return a, err
	}
	if v, err := money.Parse(a.balance); err != nil || v.Sign() < 0 {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --starting-balance must be a decimal number of USD, as 10")
	}
	if err := ask(&a.baseURL, "base-url", "The provider's base URL (OpenAI-compatible, e.g. https://api.openai.com/v1)", ""); err != nil {
		return a, err
	}
	if u, err := url.Parse(a.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --base-url must be an http or https URL, as https://api.openai.com/v1")
	}
	if err := ask(&a.model, "model", "The model id", ""); err != nil {
		return a, err
	}
	if err := ask(&a.auth, "auth", "Authentication, bearer or none", "bearer"); err != nil {
		return a, err
	}
	if a.auth != "bearer" && a.auth != "none" {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --auth must be bearer or none")
	}
	if a.auth == "bearer" {
		if err := ask(&a.keyFile, "key-file", "The file holding the API key", ""); err != nil {
			return a, err
		}
		// The key file must already be what run will read: a refusal
		// is run's own "secret file: …" sentence, and the key is never
		// shown.
		if _, err := config.ReadSecretFile(a.keyFile); err != nil {
			return a, err
		}
		if a.keyFile, err = filepath.Abs(a.keyFile); err != nil {
			return a, fault.Errorf(fault.ClassConfiguration, "init: %w", err)
		}
	} else if a.keyFile != "" {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --key-file needs --auth bearer")
	}
	if err := a.fillPrices(string(c.Prices), terminal, ask); err != nil {
		return a, err
	}
	if a.prompt == "" && terminal {
		// The one question whose empty answer is an answer: the
		// built-in prompt.
		fmt.Fprint(out, "Its first words, the system prompt [built-in]: ")
		if lines.Scan() {
			a.prompt = strings.TrimSpace(lines.Text())
		}
	}
	if strings.ContainsRune(a.prompt, 0) || len(a.prompt) > config.MaxStimulusBytes {
		return a, fault.Errorf(fault.ClassConfiguration, "init: --prompt must be at most 65536 bytes and contain no NUL")
	}
	return a, nil
}

// fillPrices decides the model's prices (docs/configuration.md#init):
// --prices when given; else the catalogue's, looked up with the
// provider of the base URL first; else, for a model the catalogue does
// not know, the answer on a terminal, and a refusal without one.
func (a *initAnswers) fillPrices(given string, terminal bool, ask func(value *string, flag, question, fallback string) error) error {
	if given == "" {
		cat := catalog.Shipped()
		if m, p, ok := cat.Find(a.model, a.baseURL); ok {
			a.price = map[string]string{"input_usd_per_million": m.Input, "output_usd_per_million": m.Output}
			if m.Cached != "" {
				a.price["cached_input_usd_per_million"] = m.Cached
			}
			if m.CacheWrite != "" {
				a.price["cache_write_input_usd_per_million"] = m.CacheWrite
			}
			a.priceFrom = fmt.Sprintf("the catalogue (%s %s, %s %s of %s)", p.Name, m.ID, cat.Source, cat.Version, cat.Date)
			return nil
		}
		if !terminal {
			return fault.Errorf(fault.ClassConfiguration, "init: model %s is not in the price catalogue: --prices is required", a.model)
		}
		if err := ask(&given, "prices", "The catalogue does not know "+a.model+"; USD per million prompt and completion tokens, INPUT,OUTPUT", ""); err != nil {
			return err
		}
	}
	in, out, ok := strings.Cut(given, ",")
	in, out = strings.TrimSpace(in), strings.TrimSpace(out)
	if !ok || in == "" || out == "" {
		return fault.Errorf(fault.ClassConfiguration, "init: --prices must be INPUT,OUTPUT (USD per million tokens)")
	}
	a.price = map[string]string{"input_usd_per_million": in, "output_usd_per_million": out}
	a.priceFrom = "--prices"
	return nil
}

// defaultName is the name init offers: the directory's name with its
// first letter capitalised ("ada" gives "Ada"), or MyAgent when that is
// no plain word.
func defaultName(dir string) string {
	base := filepath.Base(dir)
	for _, r := range base {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' {
			return "MyAgent"
		}
	}
	if base == "" || !unicode.IsLetter([]rune(base)[0]) {
		return "MyAgent"
	}
	r := []rune(base)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// initFile is one file init writes.
type initFile struct {
	path string
	data []byte
}

// files renders the three files, validating what they hold with the
// parsers that will read them.
func (a initAnswers) files() ([]initFile, error) {
	priceFile, err := json.MarshalIndent(map[string]map[string]string{a.model: a.price}, "", "  ")
	if err != nil {
		return nil, fault.Errorf(fault.ClassConfiguration, "init: %w", err)
	}
	table, err := prices.Parse(priceFile)
	if err != nil {
		return nil, fault.Errorf(fault.ClassConfiguration, "init: --prices: %w", err)
	}
	if p := table[a.model]; a.auth == "bearer" && (p.Input.IsZero() || p.Output.IsZero()) {
		return nil, fault.Errorf(fault.ClassConfiguration, "init: --prices: model %q would run free on a bearer gateway, which bills it: give its prices", a.model)
	}
	workspace := filepath.Join(a.dir, "workspace")
	servers, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": "npx", "args": []string{"-y", filesystemServer, workspace}},
		"memory": map[string]any{"command": "npx", "args": []string{"-y", memoryServer},
			"env": map[string]string{"MEMORY_FILE_PATH": "${" + config.BeingDirVar + "}/memory.jsonl"}},
	}}, "", "  ")
	if err != nil {
		return nil, fault.Errorf(fault.ClassConfiguration, "init: %w", err)
	}
	return []initFile{
		{filepath.Join(a.dir, "singularity.toml"), []byte(a.configText())},
		{filepath.Join(a.dir, "servers.json"), append(servers, '\n')},
		{filepath.Join(a.dir, "prices.json"), append(priceFile, '\n')},
	}, nil
}

// configText is the commented configuration file.
func (a initAnswers) configText() string {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, `# A standalone being, written by singularity init.
# Every option of docs/configuration.md can be set here by its flag's
# long name; a flag or an environment variable overrides the file.
# Relative paths are this file's directory's. Every command run in
# this directory reads it (elsewhere: --config %[1]s). Run:
#   singularity doctor
#   singularity run   (later: run --resume)

[brama]
brama-base-url = %[2]s
brama-model = %[3]s
brama-auth = %[4]s
`, filepath.Join(a.dir, "singularity.toml"), q(a.baseURL), q(a.model), q(a.auth))
	if a.auth == "bearer" {
		fmt.Fprintf(&b, "# The file holding the API key (owner-only); never the key itself.\nbrama-api-key-file = %s\n", q(a.keyFile))
	}
	b.WriteString(`# What the model costs, per million prompt and completion tokens.
brama-prices-file = "prices.json"

[being]
`)
	fmt.Fprintf(&b, "agent-name = %s\nstarting-balance-usd = %s\n", q(a.name), q(a.balance))
	if a.prompt != "" {
		fmt.Fprintf(&b, "# Its first words: a fresh being's system prompt, which it may change.\nsystem-prompt = %s\n", q(a.prompt))
	} else {
		b.WriteString("# Its first words (unset: the built-in system prompt for its name).\n# system-prompt = \"You are ...\"\n")
	}
	b.WriteString(`state-dir = "state"
workspace = "workspace"
# Seconds between cycles of run.
cycle-interval-secs = "5"
# stable: a prompt prefix providers can cache and bill at their cached
# price (docs/cycle.md#prompt-layouts).
prompt-layout = "stable"
# Messages between parent and children, and sleep
# (docs/tools.md#family-tools).
family-tools = true
# Survival tiers: a cheaper model or a slower life as money runs out
# (docs/money.md#survival-tiers).
# tiers-file = "tiers.json"

[las]
# MCP servers in the mcpServers format; the examples are the filesystem
# server on the workspace and the memory server, one file per being in
# its state directory (npx fetches each once). Remove them, or add your
# own (docs/las.md#several-mcp-servers).
las-servers-file = "servers.json"

[logs]
log-level = "info"
`)
	return b.String()
}

// isTerminal reports whether f is a terminal (it answers the terminal
// attributes ioctl; /dev/null, a pipe or a file does not).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
