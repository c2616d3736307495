// Package config turns the command line and the environment into one
// validated, immutable runtime configuration. Validation runs before anything
// is spawned and refuses each bad value with the exact sentence of
// docs/configuration.md#validation-sentences (exit 2), in the order of
// docs/configuration.md#variables: identity, loop and accounting, Brama,
// Las pinning, Most, then secrets, and last whether a bearer gateway
// would run a model no price is known for.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/prices/catalog"
	"github.com/wisent/singularity/internal/prompt"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tiers"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
)

// MaxStimulusBytes bounds the external observation of cycle 1.
const MaxStimulusBytes = 65536

// Runtime is the validated configuration of one process. It is a value:
// copy it freely; the slices it returns from accessors are copies.
type Runtime struct {
	// Identity is the root being's immutable identity and persona.
	Identity state.Identity
	// IdentityOpen are the identity fields no variable set, which only
	// BRAMA_AUTH bearer or none allows: Identity holds their defaults
	// (docs/configuration.md#identity) for a fresh being, and a resumed
	// being keeps the values its state holds (docs/state.md#identity).
	IdentityOpen state.IdentityFields

	StartingBalance  money.Amount
	InstancePerHour  money.Amount
	InputPerMillion  money.Amount
	OutputPerMillion money.Amount

	CycleInterval time.Duration
	MaxToolRounds int
	StateDir      string
	Workspace     string // absolute, symlinks resolved
	Resume        bool
	Stimulus      string // trimmed; empty means none
	// SystemPrompt is a fresh root's first system prompt, trimmed; empty
	// means the built-in one (docs/state.md#the-state-file).
	SystemPrompt    string
	HTTPTimeout     time.Duration
	MCPTimeout      time.Duration
	ShutdownGrace   time.Duration
	ContextMessages int
	// PromptLayout is SINGULARITY_PROMPT_LAYOUT (docs/cycle.md#prompt-layouts).
	PromptLayout prompt.Layout
	// Tiers is SINGULARITY_TIERS_FILE's survival tiers
	// (docs/money.md#survival-tiers); nil when unset.
	Tiers tiers.Table
	// CheckpointEvents is how many journal events may lie past the last
	// checkpoint before a new one is written (docs/state.md#the-journal).
	CheckpointEvents int
	// MintChildren is SINGULARITY_CHILD_FUNDING=mint: children get the
	// starting balance from nothing (docs/money.md#funded-children).
	MintChildren bool
	// FamilyTools is SINGULARITY_FAMILY_TOOLS: every being has the two
	// family tools, message_send and self_sleep
	// (docs/tools.md#family-tools).
	FamilyTools bool
	// MinCompletionTokens is the smallest max_tokens worth a call.
	MinCompletionTokens int
	// SpendLimit and FamilySpendLimit are USD per rolling hour; nil
	// means no limit (docs/money.md#spend-limits).
	SpendLimit       *money.Amount
	FamilySpendLimit *money.Amount

	Brama Brama
	Las   Las
	Most  Most

	DebugAddr        string // empty: the debug endpoint is off
	DebugAllowRemote bool
	// MetricsPerBeing labels the metrics with the being
	// (SINGULARITY_METRICS_PER_BEING, default true).
	MetricsPerBeing bool
}

// Brama is how to reach and authenticate with the model gateway
// (docs/brama.md#other-openai-compatible-gateways).
type Brama struct {
	BaseURL *url.URL
	Model   string
	// Auth is gateway.AuthHMAC, gateway.AuthBearer or gateway.AuthNone,
	// never the zero value.
	Auth gateway.Auth
	// Secret is the HMAC key (hmac only); APIKey the bearer key (bearer
	// only). The other is unset.
	Secret      identity.Secret
	APIKey      identity.Secret
	MaxTokens   int
	Temperature float64
	// MaxTokensField is gateway.FieldMaxTokens or
	// gateway.FieldMaxCompletionTokens, never the zero value.
	MaxTokensField gateway.MaxTokensField
	// Retries is BRAMA_RETRIES.
	Retries int
	// Prices are BRAMA_PRICES_FILE's table (nil when unset) over the
	// shipped catalogue (docs/brama.md#per-model-prices).
	Prices prices.Book
	// AllowFreeModel is SINGULARITY_ALLOW_FREE_MODEL: a bearer gateway
	// may run a model that would be charged nothing
	// (docs/money.md#no-free-model-by-accident).
	AllowFreeModel bool
	// PromptCacheKey is BRAMA_PROMPT_CACHE_KEY: send each being's id as
	// prompt_cache_key (docs/brama.md#prompt-cache-key).
	PromptCacheKey bool
}

// Las is how to start and pin the skill process.
type Las struct {
	Command    string
	Entrypoint string
	// Only is LAS_ONLY as given; empty means Las offers every surface.
	Only string
	// Skip is LAS_SKIP; empty means none.
	Skip                     string
	ReleaseManifest          string
	ReleaseManifestSignature string
	ReleaseTrustStore        string
	ReleaseWatermark         string
	// ServersFile is LAS_SERVERS_FILE; "" runs the classic single Las.
	ServersFile string
	// Servers are the servers file's entries in file order; empty with a
	// servers file means no Las at all.
	Servers          []Server
	requiredSurfaces []string
}

// RequiredSurfaces lists the surfaces that must expose at least one tool.
func (l Las) RequiredSurfaces() []string { return append([]string(nil), l.requiredSurfaces...) }

// Most is how to reach the messaging service; Token is unset when the Most
// tools are disabled.
type Most struct {
	BaseURL *url.URL
	Token   identity.Secret
}

// Enabled reports whether the three Most tools are registered.
func (m Most) Enabled() bool { return m.Token.IsSet() }

// LookupEnv reads one environment variable; os.LookupEnv in production,
// a map in tests.
type LookupEnv func(name string) (string, bool)

// AuthSecretEnv is the fallback source of the Brama HMAC secret.
const AuthSecretEnv = "WISENT_APP_AGENT_AUTH_SECRET"

func configError(format string, args ...any) error {
	return fault.Errorf(fault.ClassConfiguration, format, args...)
}

// OptionError is a refusal of one option's value: Variable names the
// option (its environment variable), so that the command can say where
// the value came from (a flag, the variable, or a line of the
// configuration file). Its text is the refusal's own sentence.
type OptionError struct {
	Variable string
	Err      error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// optionError is configError about the option of variable.
func optionError(variable, format string, args ...any) error {
	return &OptionError{Variable: variable, Err: configError(format, args...)}
}

// about marks err, a refusal of the option of variable, with the
// variable, unless it already names an option or is no configuration
// refusal (a secret file's).
func about(variable string, err error) error {
	var oe *OptionError
	if err == nil || errors.As(err, &oe) || fault.ClassOf(err) != fault.ClassConfiguration {
		return err
	}
	return &OptionError{Variable: variable, Err: err}
}

// Load validates every option and returns the runtime configuration, or
// the first failure as a classified error whose text is its sentence in
// docs/configuration.md#validation-sentences.
func Load(f Flags, env LookupEnv) (Runtime, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var rt Runtime
	var err error
	if standalone(f.Brama.Auth) {
		rt.IdentityOpen = identityDefaults(&f.Identity, env)
	} else if err = required(requiredIdentity(f.Identity), env); err != nil {
		return Runtime{}, err
	}
	if rt.Identity, err = loadIdentity(f.Identity, rt.IdentityOpen); err != nil {
		return Runtime{}, err
	}
	if err = loadLoop(&rt, f.Loop); err != nil {
		return Runtime{}, err
	}
	if rt.Brama, err = loadBrama(f.Brama); err != nil {
		return Runtime{}, err
	}
	if err = tierPrices(rt.Tiers, rt.Brama.Prices); err != nil {
		return Runtime{}, about("SINGULARITY_TIERS_FILE", err)
	}
	if f.Las.ServersFile == "" {
		if err = required(requiredLas(f.Las), env); err != nil {
			return Runtime{}, err
		}
	}
	if rt.Las, err = LoadLas(f.Las); err != nil {
		return Runtime{}, err
	}
	if rt.Most.BaseURL, err = parseServiceURL("MOST_BASE_URL", f.Most.BaseURL); err != nil {
		return Runtime{}, about("MOST_BASE_URL", err)
	}
	if rt.DebugAddr, err = debugAddress(f.DebugAddr, f.DebugAllow); err != nil {
		return Runtime{}, about("SINGULARITY_DEBUG_ADDR", err)
	}
	rt.DebugAllowRemote = f.DebugAllow
	rt.MetricsPerBeing = f.MetricsPerBeing
	if err = bramaCredentials(&rt.Brama, f.Brama, env); err != nil {
		return Runtime{}, err
	}
	if f.Most.TokenFile != "" {
		if rt.Most.Token, err = readSecretOption("MOST_SERVICE_TOKEN_FILE", f.Most.TokenFile); err != nil {
			return Runtime{}, err
		}
	}
	// Last, once every value and secret is valid: what the models cost.
	if err = freeModels(rt); err != nil {
		return Runtime{}, err
	}
	return rt, nil
}

// setting is one variable's value as the flags give it.
type setting struct{ name, value string }

// required refuses the first variable of vars that is not set at all
// (docs/configuration.md#validation-sentences): empty and absent from the
// environment. A variable set to the empty string is a value and meets the
// sentence of its rule instead.
func required(vars []setting, env LookupEnv) error {
	for _, v := range vars {
		if v.value != "" {
			continue
		}
		if _, set := env(v.name); !set {
			return configError("%s is required", v.name)
		}
	}
	return nil
}

// requiredIdentity lists the identity variables without a default, in
// the order of docs/configuration.md#variables.
func requiredIdentity(f IdentityFlags) []setting {
	return []setting{
		{"SINGULARITY_AGENT_ID", f.AgentID},
		{"SINGULARITY_ROLE", f.Role},
		{"SINGULARITY_ENVIRONMENT", f.Environment},
		{"SINGULARITY_HOST", f.Host},
		{"SINGULARITY_WORKLOAD_ID", f.WorkloadID},
		{"SINGULARITY_WORKLOAD_PUBLIC_KEY", f.WorkloadPublicKey},
		{"SINGULARITY_EXECUTABLE_SHA256", f.ExecutableSHA256},
		{"SINGULARITY_CODE_SHA256", f.CodeSHA256},
		{"SINGULARITY_POLICY_SHA256", f.PolicySHA256},
		{"SINGULARITY_POLICY_SEQUENCE", f.PolicySequence},
	}
}

// requiredLas lists the Las pinning variables without a default.
func requiredLas(f LasFlags) []setting {
	return []setting{
		{"LAS_RELEASE_MANIFEST_FILE", f.Manifest},
		{"LAS_RELEASE_MANIFEST_SIGNATURE_FILE", f.ManifestSig},
		{"LAS_RELEASE_TRUST_STORE_FILE", f.TrustStore},
		{"LAS_RELEASE_WATERMARK_FILE", f.Watermark},
	}
}

// The identity defaults of docs/configuration.md#identity, for a gateway
// other than Brama.
const (
	DefaultRole        = "worker"
	DefaultEnvironment = "local"
	DefaultWorkloadID  = "standalone"
	// DefaultHost is the host when the hostname is unknown or has no
	// character an identifier may hold.
	DefaultHost = "localhost"
)

// standalone reports whether auth names a gateway other than Brama, with
// which the Wisent identity variables are optional. An unparsable value
// counts as Brama here; loadBrama refuses it later.
func standalone(auth string) bool {
	a, err := gateway.ParseAuth(auth)
	return err == nil && !a.Brama()
}

// identityDefaults fills the identity variables of f that are not set at
// all (as for required: empty and absent from env) with their defaults and
// returns them as open fields: a fresh agent id (a random UUID, kept in
// the state once the being is created), DefaultRole, DefaultEnvironment,
// the hostname (HostIdentifier), DefaultWorkloadID, no digests and policy
// sequence 0. A variable set to the empty string stays a value and meets
// its rule.
func identityDefaults(f *IdentityFlags, env LookupEnv) state.IdentityFields {
	constant := func(v string) func() string { return func() string { return v } }
	defaults := []struct {
		name  string
		value *string
		field state.IdentityFields
		def   func() string
	}{
		{"SINGULARITY_AGENT_ID", &f.AgentID, state.IdentityAgentID, uuid.NewString},
		{"SINGULARITY_ROLE", &f.Role, state.IdentityRole, constant(DefaultRole)},
		{"SINGULARITY_ENVIRONMENT", &f.Environment, state.IdentityEnvironment, constant(DefaultEnvironment)},
		{"SINGULARITY_HOST", &f.Host, state.IdentityHost, HostIdentifier},
		{"SINGULARITY_WORKLOAD_ID", &f.WorkloadID, state.IdentityWorkloadID, constant(DefaultWorkloadID)},
		{"SINGULARITY_WORKLOAD_PUBLIC_KEY", &f.WorkloadPublicKey, state.IdentityWorkloadPublicKey, constant("")},
		{"SINGULARITY_EXECUTABLE_SHA256", &f.ExecutableSHA256, state.IdentityExecutableDigest, constant("")},
		{"SINGULARITY_CODE_SHA256", &f.CodeSHA256, state.IdentityCodeDigest, constant("")},
		{"SINGULARITY_POLICY_SHA256", &f.PolicySHA256, state.IdentityPolicyDigest, constant("")},
		{"SINGULARITY_POLICY_SEQUENCE", &f.PolicySequence, state.IdentityPolicySequence, constant("0")},
	}
	var open state.IdentityFields
	for _, d := range defaults {
		if *d.value != "" {
			continue
		}
		if _, set := env(d.name); set {
			continue
		}
		*d.value = d.def()
		open |= d.field
	}
	return open
}

// HostIdentifier is the hostname as an identifier: every character an
// identifier may not hold becomes "-", cut to 128 characters; DefaultHost
// when the hostname is unknown or nothing of it remains.
func HostIdentifier() string {
	name, err := os.Hostname()
	if err != nil {
		return DefaultHost
	}
	return hostIdentifier(name)
}

func hostIdentifier(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			b[i] = '-'
		}
	}
	if len(b) > 128 {
		b = b[:128]
	}
	if s := string(b); identity.Valid(s) && strings.Trim(s, "-") != "" {
		return s
	}
	return DefaultHost
}

// loadIdentity validates the identity; a digest in open (none configured)
// is the empty string and needs no form.
func loadIdentity(f IdentityFlags, open state.IdentityFields) (state.Identity, error) {
	ids := []struct{ label, variable, value string }{
		{"agent id", "SINGULARITY_AGENT_ID", f.AgentID},
		{"role", "SINGULARITY_ROLE", f.Role},
		{"environment", "SINGULARITY_ENVIRONMENT", f.Environment},
		{"host", "SINGULARITY_HOST", f.Host},
		{"workload id", "SINGULARITY_WORKLOAD_ID", f.WorkloadID},
	}
	for _, id := range ids {
		if !identity.Valid(id.value) {
			return state.Identity{}, optionError(id.variable, "%s is not a valid immutable identifier", id.label)
		}
	}
	digests := []struct {
		label, variable, value string
		field                  state.IdentityFields
	}{
		{"workload public key", "SINGULARITY_WORKLOAD_PUBLIC_KEY", f.WorkloadPublicKey, state.IdentityWorkloadPublicKey},
		{"executable digest", "SINGULARITY_EXECUTABLE_SHA256", f.ExecutableSHA256, state.IdentityExecutableDigest},
		{"code digest", "SINGULARITY_CODE_SHA256", f.CodeSHA256, state.IdentityCodeDigest},
		{"policy digest", "SINGULARITY_POLICY_SHA256", f.PolicySHA256, state.IdentityPolicyDigest},
	}
	for _, d := range digests {
		if !open.Has(d.field) && !validDigest(d.value) {
			return state.Identity{}, optionError(d.variable, "%s must be 64 lowercase hexadecimal characters", d.label)
		}
	}
	seq, err := strconv.ParseUint(f.PolicySequence, 10, 64)
	if err != nil {
		return state.Identity{}, optionError("SINGULARITY_POLICY_SEQUENCE", "policy sequence must be an unsigned integer")
	}
	return state.Identity{
		AgentID:           f.AgentID,
		Name:              f.AgentName,
		Ticker:            f.AgentTicker,
		AgentType:         f.AgentType,
		Specialty:         f.Specialty,
		Role:              f.Role,
		Environment:       f.Environment,
		Host:              f.Host,
		WorkloadID:        f.WorkloadID,
		WorkloadPublicKey: f.WorkloadPublicKey,
		ExecutableDigest:  f.ExecutableSHA256,
		CodeDigest:        f.CodeSHA256,
		PolicyDigest:      f.PolicySHA256,
		PolicySequence:    seq,
	}, nil
}

func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// amountOption parses an amount option named name (a price or the
// starting balance): a decimal ≥ 0.
func amountOption(name, text string) (money.Amount, error) {
	v, err := money.Parse(text)
	if errors.Is(err, money.ErrRange) {
		return money.Zero, configError("%s is out of range", name)
	}
	if err != nil {
		return money.Zero, configError("%s must be a decimal number", name)
	}
	if v.Sign() < 0 {
		return money.Zero, configError("prices and balance cannot be negative")
	}
	return v, nil
}

// PriceFlags are the options that decide what a model is charged: the
// gateway (whose provider the catalogue looks up first), the prices file
// and the two price options. They are a subset of Flags, for
// `singularity prices`.
type PriceFlags struct {
	BaseURL          string
	PricesFile       string
	InputPerMillion  string
	OutputPerMillion string
}

// LoadPrices validates f as Load does and returns the book of prices
// (the prices file over the catalogue for the gateway at BaseURL) and
// the pair of the two price options.
func LoadPrices(f PriceFlags) (prices.Book, prices.Pair, error) {
	var options prices.Pair
	var err error
	if options.Input, err = amountOption("input price", f.InputPerMillion); err != nil {
		return prices.Book{}, options, err
	}
	if options.Output, err = amountOption("output price", f.OutputPerMillion); err != nil {
		return prices.Book{}, options, err
	}
	base, err := parseServiceURL("BRAMA_BASE_URL", f.BaseURL)
	if err != nil {
		return prices.Book{}, options, err
	}
	table, err := loadPrices(f.PricesFile)
	if err != nil {
		return prices.Book{}, options, err
	}
	return prices.Book{File: table, Catalogue: catalog.Shipped().For(base.String())}, options, nil
}

func loadLoop(rt *Runtime, f LoopFlags) error {
	prices := []struct {
		name, variable, text string
		dst                  *money.Amount
	}{
		{"starting balance", "SINGULARITY_STARTING_BALANCE_USD", f.StartingBalance, &rt.StartingBalance},
		{"instance price", "SINGULARITY_INSTANCE_USD_PER_HOUR", f.InstancePerHour, &rt.InstancePerHour},
		{"input price", "BRAMA_INPUT_PRICE_USD_PER_MILLION", f.InputPerMillion, &rt.InputPerMillion},
		{"output price", "BRAMA_OUTPUT_PRICE_USD_PER_MILLION", f.OutputPerMillion, &rt.OutputPerMillion},
	}
	for _, p := range prices {
		v, err := amountOption(p.name, p.text)
		if err != nil {
			return &OptionError{Variable: p.variable, Err: err}
		}
		*p.dst = v
	}
	var err error
	if rt.CycleInterval, err = seconds("cycle interval", f.CycleInterval); err != nil {
		return about("SINGULARITY_CYCLE_INTERVAL_SECS", err)
	}
	rounds, err := strconv.ParseUint(f.MaxToolRounds, 10, 31)
	if err != nil {
		return optionError("SINGULARITY_MAX_TOOL_ROUNDS", "max tool rounds must be a positive integer")
	}
	if rounds == 0 {
		return optionError("SINGULARITY_MAX_TOOL_ROUNDS", "max tool rounds must be positive")
	}
	rt.MaxToolRounds = int(rounds)
	if f.StateDir == "" {
		return optionError("SINGULARITY_STATE_DIR", "state directory must not be empty")
	}
	rt.StateDir = f.StateDir
	if rt.Workspace, err = workspace(f.Workspace); err != nil {
		return about("SINGULARITY_WORKSPACE", err)
	}
	rt.Resume = f.Resume
	rt.Stimulus = strings.TrimSpace(f.Stimulus)
	if len(rt.Stimulus) > MaxStimulusBytes || strings.ContainsRune(rt.Stimulus, 0) {
		return optionError("SINGULARITY_STIMULUS", "stimulus must be at most 65536 bytes and contain no NUL")
	}
	rt.SystemPrompt = strings.TrimSpace(f.SystemPrompt)
	if len(rt.SystemPrompt) > MaxStimulusBytes || strings.ContainsRune(rt.SystemPrompt, 0) {
		return optionError("SINGULARITY_SYSTEM_PROMPT", "system prompt must be at most 65536 bytes and contain no NUL")
	}
	if rt.HTTPTimeout, err = positiveSeconds("HTTP timeout", f.HTTPTimeout); err != nil {
		return about("SINGULARITY_HTTP_TIMEOUT_SECS", err)
	}
	if rt.MCPTimeout, err = positiveSeconds("MCP timeout", f.MCPTimeout); err != nil {
		return about("SINGULARITY_MCP_TIMEOUT_SECS", err)
	}
	if rt.ShutdownGrace, err = seconds("shutdown grace", f.ShutdownGrace); err != nil {
		return about("SINGULARITY_SHUTDOWN_GRACE_SECS", err)
	}
	window, err := strconv.ParseUint(f.ContextMessages, 10, 31)
	if err != nil || window == 0 {
		return optionError("SINGULARITY_CONTEXT_MESSAGES", "context messages must be a positive integer")
	}
	rt.ContextMessages = int(window)
	events, err := strconv.ParseUint(strings.TrimSpace(f.CheckpointEvents), 10, 31)
	if err != nil || events == 0 {
		return optionError("SINGULARITY_CHECKPOINT_EVENTS", "checkpoint events must be a positive integer")
	}
	rt.CheckpointEvents = int(events)
	switch layout := prompt.Layout(strings.TrimSpace(f.PromptLayout)); layout {
	case "", prompt.LayoutSeed:
		rt.PromptLayout = prompt.LayoutSeed
	case prompt.LayoutStable:
		rt.PromptLayout = layout
	default:
		return optionError("SINGULARITY_PROMPT_LAYOUT", "prompt layout must be seed or stable")
	}
	if rt.Tiers, err = loadTiers(f.TiersFile); err != nil {
		return about("SINGULARITY_TIERS_FILE", err)
	}
	switch strings.TrimSpace(f.ChildFunding) {
	case "transfer":
	case "mint":
		rt.MintChildren = true
	default:
		return optionError("SINGULARITY_CHILD_FUNDING", "child funding must be transfer or mint")
	}
	rt.FamilyTools = f.FamilyTools
	tokens, err := strconv.ParseUint(strings.TrimSpace(f.MinCompletion), 10, 31)
	if err != nil || tokens == 0 {
		return optionError("SINGULARITY_MIN_COMPLETION_TOKENS", "min completion tokens must be a positive integer")
	}
	rt.MinCompletionTokens = int(tokens)
	if rt.SpendLimit, err = spendLimit("spend limit", f.SpendLimit); err != nil {
		return about("SINGULARITY_SPEND_LIMIT_USD_PER_HOUR", err)
	}
	if rt.FamilySpendLimit, err = spendLimit("family spend limit", f.FamilySpendLimit); err != nil {
		return about("SINGULARITY_FAMILY_SPEND_LIMIT_USD_PER_HOUR", err)
	}
	return nil
}

// spendLimit parses an optional limit in USD per hour: unset (or blank)
// means none, else a decimal above zero.
func spendLimit(label, s string) (*money.Amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	v, err := money.Parse(s)
	if errors.Is(err, money.ErrRange) {
		return nil, configError(label + " is out of range")
	}
	if err != nil || v.Sign() <= 0 {
		return nil, configError(label + " must be a decimal above zero")
	}
	return &v, nil
}

// seconds parses a non-negative whole or fractional number of seconds.
func seconds(label, text string) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
		return 0, configError("%s must be a non-negative number of seconds", label)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func positiveSeconds(label, text string) (time.Duration, error) {
	d, err := seconds(label, text)
	if err == nil && d <= 0 {
		err = configError("%s must be a positive number of seconds", label)
	}
	return d, err
}

// Workspace resolves SINGULARITY_WORKSPACE as Load does: absolute, symlinks
// resolved, an existing directory.
func Workspace(dir string) (string, error) { return workspace(dir) }

func workspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(abs); err == nil && !info.IsDir() {
			return "", configError("workspace must be a directory")
		}
	}
	if err != nil {
		return "", configError("workspace: %w", osError{err})
	}
	return abs, nil
}

// osError is an OS error that prints as the OS's own text, without the
// operation and path that *PathError adds, so a sentence can name the path
// once; errors.Is and errors.As still reach the whole error.
type osError struct{ err error }

func (e osError) Error() string {
	var pe *os.PathError
	if errors.As(e.err, &pe) {
		return pe.Err.Error()
	}
	return e.err.Error()
}

func (e osError) Unwrap() error { return e.err }

func loadBrama(f BramaFlags) (Brama, error) {
	base, err := parseServiceURL("BRAMA_BASE_URL", f.BaseURL)
	if err != nil {
		return Brama{}, about("BRAMA_BASE_URL", err)
	}
	auth, err := gateway.ParseAuth(f.Auth)
	if err != nil {
		return Brama{}, optionError("BRAMA_AUTH", "%w", err)
	}
	if strings.TrimSpace(f.Model) == "" {
		return Brama{}, optionError("BRAMA_MODEL", "model must not be empty")
	}
	if err := auth.CheckModel(f.Model); err != nil {
		return Brama{}, optionError("BRAMA_MODEL", "%w", err)
	}
	maxTokens, err := strconv.ParseUint(f.MaxTokens, 10, 31)
	if err != nil || maxTokens == 0 {
		return Brama{}, optionError("BRAMA_MAX_TOKENS", "max tokens must be positive")
	}
	field, err := gateway.ParseMaxTokensField(f.MaxField)
	if err != nil {
		return Brama{}, optionError("BRAMA_MAX_TOKENS_FIELD", "%w", err)
	}
	temp, err := strconv.ParseFloat(f.Temperature, 64)
	if err != nil || math.IsNaN(temp) || math.IsInf(temp, 0) || temp < 0 || temp > 2 {
		return Brama{}, optionError("BRAMA_TEMPERATURE", "temperature must be finite and between zero and two")
	}
	retries := uint64(2)
	if f.Retries != "" {
		if retries, err = strconv.ParseUint(strings.TrimSpace(f.Retries), 10, 8); err != nil {
			return Brama{}, optionError("BRAMA_RETRIES", "BRAMA_RETRIES must be an unsigned integer")
		}
	}
	table, err := loadPrices(f.PricesFile)
	if err != nil {
		return Brama{}, about("BRAMA_PRICES_FILE", err)
	}
	return Brama{
		BaseURL: base, Model: f.Model, Auth: auth, MaxTokens: int(maxTokens), Temperature: temp,
		MaxTokensField: field, Retries: int(retries), PromptCacheKey: f.CacheKey,
		Prices: prices.Book{File: table, Catalogue: catalog.Shipped().For(base.String())}, AllowFreeModel: f.AllowFreeModel,
	}, nil
}

// loadPrices reads BRAMA_PRICES_FILE (docs/brama.md#per-model-prices); an
// empty path is no table.
func loadPrices(path string) (prices.Table, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readFile(path, MaxPricesFileBytes)
	if err != nil {
		return nil, configError("BRAMA_PRICES_FILE: %s: %w", path, err)
	}
	table, err := prices.Parse(data)
	if err != nil {
		return nil, configError("BRAMA_PRICES_FILE: %w", err)
	}
	return table, nil
}

// loadTiers reads SINGULARITY_TIERS_FILE (docs/money.md#survival-tiers);
// an empty path is no tiers.
func loadTiers(path string) (tiers.Table, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readFile(path, MaxTiersFileBytes)
	if err != nil {
		return nil, configError("SINGULARITY_TIERS_FILE: %s: %w", path, err)
	}
	table, err := tiers.Parse(data)
	if err != nil {
		return nil, configError("SINGULARITY_TIERS_FILE: %w", err)
	}
	return table, nil
}

// tierPrices refuses a tier whose model neither the prices file nor the
// catalogue lists (docs/money.md#survival-tiers): with BRAMA_PRICES_FILE,
// a model id a tier switches to would otherwise be priced by the two
// price variables without anyone having chosen them. A selector is
// priced by the model that answers.
func tierPrices(t tiers.Table, p prices.Book) error {
	if p.File == nil {
		return nil
	}
	for i, tier := range t {
		if tier.Model == "" || gateway.IsSelector(tier.Model) {
			continue
		}
		if _, _, ok := p.Find(tier.Model); !ok {
			return configError("SINGULARITY_TIERS_FILE: tier %d: model %q has no price in BRAMA_PRICES_FILE", i+1, tier.Model)
		}
	}
	return nil
}

// TierModels is the model ids the tiers switch to, in the file's order,
// each once: what the gateway's model list must hold
// (CheckTierModels). Selectors are Brama's to resolve and are left out.
func TierModels(t tiers.Table) []string {
	var ids []string
	for _, tier := range t {
		if tier.Model != "" && !gateway.IsSelector(tier.Model) && !slices.Contains(ids, tier.Model) {
			ids = append(ids, tier.Model)
		}
	}
	return ids
}

// CheckTierModels refuses the first tier whose model id the gateway's
// model list (listed) does not hold (docs/money.md#survival-tiers): a
// being entering that tier would be refused every completion. doctor
// and the boot of once and run ask the list for it.
func CheckTierModels(t tiers.Table, listed []string) error {
	for i, tier := range t {
		if tier.Model == "" || gateway.IsSelector(tier.Model) || slices.Contains(listed, tier.Model) {
			continue
		}
		return configError("SINGULARITY_TIERS_FILE: tier %d: model %q is not in the gateway's model list", i+1, tier.Model)
	}
	return nil
}

// freeModels refuses, on a bearer gateway, a model the being would be
// charged nothing for (docs/money.md#no-free-model-by-accident): the
// configured model and every tier's, unless AllowFreeModel. A keyless
// (none) server may run free; Brama (hmac) bills by its own prices.
func freeModels(rt Runtime) error {
	if rt.Brama.Auth != gateway.AuthBearer || rt.Brama.AllowFreeModel {
		return nil
	}
	options := rt.OptionPrices()
	models := []string{rt.Brama.Model}
	for _, tier := range rt.Tiers {
		if tier.Model != "" && !gateway.IsSelector(tier.Model) {
			models = append(models, tier.Model)
		}
	}
	for _, model := range models {
		if rt.Brama.Prices.Free(model, options) {
			return configError("%s", prices.NoPrice(model))
		}
	}
	return nil
}

// OptionPrices is the pair of the two price options, what a model
// neither the prices file nor the catalogue lists is charged.
func (rt Runtime) OptionPrices() prices.Pair {
	return prices.Pair{Input: rt.InputPerMillion, Output: rt.OutputPerMillion}
}

// RequirePrice reports whether the beings must refuse to switch to a
// model they would be charged nothing for: a bearer gateway without
// AllowFreeModel (docs/money.md#no-free-model-by-accident).
func (rt Runtime) RequirePrice() bool {
	return rt.Brama.Auth == gateway.AuthBearer && !rt.Brama.AllowFreeModel
}

func parseServiceURL(name, text string) (*url.URL, error) {
	u, err := url.Parse(text)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, configError("%s: %w", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, configError("%s must use http or https", name)
	}
	return u, nil
}

// LoadLas validates the Las selection and pinning
// (docs/configuration.md#variables). The tools command uses it alone; Load
// uses it as one step of the whole.
//
// With LAS_SERVERS_FILE (docs/las.md#several-mcp-servers) the servers come
// from that file instead of LAS_COMMAND and LAS_MCP_ENTRYPOINT, and the
// four release pins are optional: checked only when set.
func LoadLas(f LasFlags) (Las, error) {
	serversMode := f.ServersFile != ""
	if !serversMode {
		info, err := os.Stat(f.Entrypoint)
		if err != nil || info.IsDir() {
			return Las{}, optionError("LAS_MCP_ENTRYPOINT", "LAS entrypoint not found: %s", f.Entrypoint)
		}
	}
	files := []struct{ label, variable, path string }{
		{"LAS release manifest", "LAS_RELEASE_MANIFEST_FILE", f.Manifest},
		{"LAS release manifest signature", "LAS_RELEASE_MANIFEST_SIGNATURE_FILE", f.ManifestSig},
		{"LAS release trust store", "LAS_RELEASE_TRUST_STORE_FILE", f.TrustStore},
	}
	for _, file := range files {
		if serversMode && file.path == "" {
			continue
		}
		if !absoluteRegularFile(file.path) {
			return Las{}, optionError(file.variable, "%s must be an absolute regular file", file.label)
		}
	}
	if (!serversMode || f.Watermark != "") && !filepath.IsAbs(f.Watermark) {
		return Las{}, optionError("LAS_RELEASE_WATERMARK_FILE", "LAS release watermark must be an absolute path")
	}
	var servers []Server
	if serversMode {
		var err error
		if servers, err = LoadServers(f.ServersFile); err != nil {
			return Las{}, about("LAS_SERVERS_FILE", err)
		}
	}
	return Las{
		ServersFile:              f.ServersFile,
		Servers:                  servers,
		Command:                  f.Command,
		Entrypoint:               f.Entrypoint,
		Only:                     f.Only,
		Skip:                     f.Skip,
		ReleaseManifest:          f.Manifest,
		ReleaseManifestSignature: f.ManifestSig,
		ReleaseTrustStore:        f.TrustStore,
		ReleaseWatermark:         f.Watermark,
		requiredSurfaces:         requiredSurfaces(f.RequiredSurfaces, serversMode),
	}, nil
}

// DefaultRequiredSurfaces are the surfaces the classic Las must offer
// when SINGULARITY_REQUIRED_SURFACES is not set; with a servers file none
// is required unless it is set.
const DefaultRequiredSurfaces = "skarbiec,finance"

func requiredSurfaces(text *string, serversMode bool) []string {
	switch {
	case text != nil:
		return SplitList(*text)
	case serversMode:
		return nil
	default:
		return SplitList(DefaultRequiredSurfaces)
	}
}

func absoluteRegularFile(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// SplitList splits a comma list, trimming entries and dropping blanks.
func SplitList(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func debugAddress(addr string, allowRemote bool) (string, error) {
	if addr == "" || allowRemote {
		return addr, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", configError("debug address: %w", err)
	}
	if host == "localhost" {
		return addr, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, nil
	}
	return "", configError("debug address must be loopback")
}

// bramaCredentials reads the credential the authentication mode needs: the
// HMAC secret for hmac, the bearer key for bearer, none for none. The
// other credential is not read at all.
func bramaCredentials(b *Brama, f BramaFlags, env LookupEnv) error {
	var err error
	switch b.Auth {
	case gateway.AuthHMAC:
		b.Secret, err = bramaSecret(f.SecretFile, env)
	case gateway.AuthBearer:
		if f.APIKeyFile == "" {
			return fault.New(fault.ClassSecret, "BRAMA_API_KEY_FILE is required when BRAMA_AUTH is bearer")
		}
		b.APIKey, err = readSecretOption("BRAMA_API_KEY_FILE", f.APIKeyFile)
	}
	return err
}

func bramaSecret(file string, env LookupEnv) (identity.Secret, error) {
	if file != "" {
		return readSecretOption("BRAMA_HMAC_SECRET_FILE", file)
	}
	if v, ok := env(AuthSecretEnv); ok && v != "" {
		return identity.NewSecret([]byte(v)), nil
	}
	return identity.Secret{}, fault.New(fault.ClassSecret, "BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required")
}

// ReadSecretFile reads a credential from path
// (docs/configuration.md#variables): it must be a regular file, not group- or
// world-accessible, at most MaxSecretFileBytes, and non-empty once
// trailing CR and LF are stripped.
// Errors name the path, never the value.
func ReadSecretFile(path string) (identity.Secret, error) {
	data, err := readSecretBytes(path)
	if err != nil {
		return identity.Secret{}, err
	}
	value := strings.TrimRight(string(data), "\r\n")
	if value == "" {
		return identity.Secret{}, fault.Errorf(fault.ClassSecret, "%s is empty", path)
	}
	return identity.NewSecret([]byte(value)), nil
}

// Secrets returns every secret value the runtime holds: the Brama HMAC
// secret, the bearer key, the Most token and the secret values of the
// servers file (secretsOf). The output boundary redacts them in upstream
// text. A value not configured is the zero Secret.
func (rt Runtime) Secrets() []identity.Secret {
	out := []identity.Secret{rt.Brama.Secret, rt.Brama.APIKey, rt.Most.Token}
	return append(out, secretsOf(rt.Las.Servers)...)
}

// String summarises the configuration for logs; it holds no secret.
func (rt Runtime) String() string {
	return fmt.Sprintf("agent %s, state %s, brama %s model %s auth %s", rt.Identity.AgentID, rt.StateDir, rt.Brama.BaseURL, rt.Brama.Model, rt.Brama.Auth)
}
