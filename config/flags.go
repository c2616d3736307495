package config

// Flags is every option of docs/configuration.md#variables as the command
// line and the environment give it: one --flag per variable, bound to that
// variable by kong, with the documented defaults. Values stay text here
// so that validation (Load) can refuse each bad one with its exact
// sentence (docs/configuration.md#validation-sentences) rather than a
// parser's message. A variable set to the empty string is a value, not
// "unset" (docs/configuration.md#empty-values).
type Flags struct {
	Identity   IdentityFlags `embed:"" group:"Identity"`
	Loop       LoopFlags     `embed:"" group:"Loop, accounting and state"`
	Brama      BramaFlags    `embed:"" group:"Brama"`
	Las        LasFlags      `embed:"" group:"Las"`
	Most       MostFlags     `embed:"" group:"Most"`
	DebugAddr  string        `name:"debug-addr" env:"SINGULARITY_DEBUG_ADDR" help:"Debug endpoint address (off when empty); must be loopback."`
	DebugAllow bool          `name:"debug-allow-remote" env:"SINGULARITY_DEBUG_ALLOW_REMOTE" help:"Allow the debug endpoint on a non-loopback address."`
	// MetricsPerBeing labels the /metrics series with the being; false
	// drops the label for very large families.
	MetricsPerBeing bool `name:"metrics-per-being" env:"SINGULARITY_METRICS_PER_BEING" default:"true" negatable:"" help:"Label the /metrics series with each being; --no-metrics-per-being or SINGULARITY_METRICS_PER_BEING=false drops the label for very large families."`
}

// IdentityFlags are the immutable identity of the root being
// (docs/state.md#identity). With BRAMA_AUTH=hmac every one without a
// default is required; with bearer or none each may be left unset and
// takes the default of docs/configuration.md#identity.
type IdentityFlags struct {
	AgentID           string `name:"agent-id" env:"SINGULARITY_AGENT_ID" help:"Immutable agent identifier (required with hmac; else generated once and kept in the state)."`
	AgentName         string `name:"agent-name" env:"SINGULARITY_AGENT_NAME" default:"MyAgent" help:"Persona name."`
	AgentTicker       string `name:"agent-ticker" env:"SINGULARITY_AGENT_TICKER" default:"AGENT" help:"Persona ticker."`
	AgentType         string `name:"agent-type" env:"SINGULARITY_AGENT_TYPE" default:"general" help:"Persona type."`
	Specialty         string `name:"specialty" env:"SINGULARITY_SPECIALTY" default:"general" help:"Persona specialty."`
	Role              string `name:"role" env:"SINGULARITY_ROLE" help:"Immutable role identifier (required with hmac; else worker)."`
	Environment       string `name:"environment" env:"SINGULARITY_ENVIRONMENT" help:"Immutable environment identifier (required with hmac; else local)."`
	Host              string `name:"host" env:"SINGULARITY_HOST" help:"Immutable host identifier (required with hmac; else the hostname)."`
	WorkloadID        string `name:"workload-id" env:"SINGULARITY_WORKLOAD_ID" help:"Immutable workload identifier (required with hmac; else standalone)."`
	WorkloadPublicKey string `name:"workload-public-key" env:"SINGULARITY_WORKLOAD_PUBLIC_KEY" help:"Workload public key, 64 lowercase hex (required with hmac; else none)."`
	ExecutableSHA256  string `name:"executable-sha256" env:"SINGULARITY_EXECUTABLE_SHA256" help:"Executable digest, 64 lowercase hex (required with hmac; else none)."`
	CodeSHA256        string `name:"code-sha256" env:"SINGULARITY_CODE_SHA256" help:"Code digest, 64 lowercase hex (required with hmac; else none)."`
	PolicySHA256      string `name:"policy-sha256" env:"SINGULARITY_POLICY_SHA256" help:"Policy digest, 64 lowercase hex (required with hmac; else none)."`
	PolicySequence    string `name:"policy-sequence" env:"SINGULARITY_POLICY_SEQUENCE" help:"Policy sequence, unsigned integer (required with hmac; else 0)."`
}

// LoopFlags govern the cycle loop, accounting and the state directory.
type LoopFlags struct {
	StartingBalance  string `name:"starting-balance-usd" env:"SINGULARITY_STARTING_BALANCE_USD" default:"10" help:"Starting budget in USD."`
	InstancePerHour  string `name:"instance-usd-per-hour" env:"SINGULARITY_INSTANCE_USD_PER_HOUR" default:"0" help:"Instance cost in USD per hour of model-call time."`
	InputPerMillion  string `name:"input-price-usd-per-million" env:"BRAMA_INPUT_PRICE_USD_PER_MILLION" default:"0" help:"Price of a million prompt tokens in USD."`
	OutputPerMillion string `name:"output-price-usd-per-million" env:"BRAMA_OUTPUT_PRICE_USD_PER_MILLION" default:"0" help:"Price of a million completion tokens in USD."`
	CycleInterval    string `name:"cycle-interval-secs" env:"SINGULARITY_CYCLE_INTERVAL_SECS" default:"5" help:"Seconds to sleep between cycles in run."`
	MaxToolRounds    string `name:"max-tool-rounds" env:"SINGULARITY_MAX_TOOL_ROUNDS" default:"8" help:"Model rounds per cycle."`
	StateDir         string `name:"state-dir" env:"SINGULARITY_STATE_DIR" default:".singularity" help:"Owner-only state directory."`
	Workspace        string `name:"workspace" env:"SINGULARITY_WORKSPACE" default:"." help:"Directory the file tools are confined to."`
	Resume           bool   `name:"resume" env:"SINGULARITY_RESUME" help:"Continue existing state."`
	Stimulus         string `name:"stimulus" env:"SINGULARITY_STIMULUS" help:"External observation for cycle 1."`
	SystemPrompt     string `name:"system-prompt" env:"SINGULARITY_SYSTEM_PROMPT" help:"A fresh root being's first system prompt, its first words (empty: the built-in one for its name and specialty)."`
	HTTPTimeout      string `name:"http-timeout-secs" env:"SINGULARITY_HTTP_TIMEOUT_SECS" default:"120" help:"Brama and Most HTTP timeout in seconds."`
	MCPTimeout       string `name:"mcp-timeout-secs" env:"SINGULARITY_MCP_TIMEOUT_SECS" default:"120" help:"Per-request Las deadline in seconds."`
	ShutdownGrace    string `name:"shutdown-grace-secs" env:"SINGULARITY_SHUTDOWN_GRACE_SECS" default:"10" help:"Grace in seconds before the Las child is killed."`
	ContextMessages  string `name:"context-messages" env:"SINGULARITY_CONTEXT_MESSAGES" default:"200" help:"Conversation window in messages."`
	PromptLayout     string `name:"prompt-layout" env:"SINGULARITY_PROMPT_LAYOUT" default:"seed" help:"How the mind is laid out in the prompt: seed (the reference's) or stable (a prefix providers can cache)."`
	TiersFile        string `name:"tiers-file" env:"SINGULARITY_TIERS_FILE" help:"JSON file of survival tiers: settings for when the balance falls below a bound."`
	CheckpointEvents string `name:"checkpoint-events" env:"SINGULARITY_CHECKPOINT_EVENTS" default:"256" help:"Journal events past the last checkpoint that trigger a new one."`
	ChildFunding     string `name:"child-funding" env:"SINGULARITY_CHILD_FUNDING" default:"transfer" help:"Where children's money comes from: transfer (from the parent) or mint."`
	// FamilyTools registers the two family tools (message_send,
	// self_sleep); off, the catalogue is the seed's nine built-ins.
	FamilyTools      bool   `name:"family-tools" env:"SINGULARITY_FAMILY_TOOLS" help:"Give every being the family tools: singularity_message_send (to its parent or a child) and singularity_self_sleep."`
	MinCompletion    string `name:"min-completion-tokens" env:"SINGULARITY_MIN_COMPLETION_TOKENS" default:"256" help:"Smallest max_tokens worth a completion; below it the being is exhausted."`
	SpendLimit       string `name:"spend-limit-usd-per-hour" env:"SINGULARITY_SPEND_LIMIT_USD_PER_HOUR" help:"Each being's spending limit in USD per rolling hour (unset: none)."`
	FamilySpendLimit string `name:"family-spend-limit-usd-per-hour" env:"SINGULARITY_FAMILY_SPEND_LIMIT_USD_PER_HOUR" help:"The whole family's spending limit in USD per rolling hour (unset: none)."`
}

// BramaFlags locate and authenticate the model gateway.
type BramaFlags struct {
	BaseURL     string `name:"brama-base-url" env:"BRAMA_BASE_URL" default:"http://127.0.0.1:8081" help:"Brama base URL (http or https)."`
	Model       string `name:"brama-model" env:"BRAMA_MODEL" default:"any" help:"Model id or selector (any, any-vision-capable, best, task:…)."`
	SecretFile  string `name:"brama-hmac-secret-file" env:"BRAMA_HMAC_SECRET_FILE" help:"File holding the HMAC secret (else WISENT_APP_AGENT_AUTH_SECRET)."`
	MaxTokens   string `name:"brama-max-tokens" env:"BRAMA_MAX_TOKENS" default:"2048" help:"max_tokens of each completion."`
	Temperature string `name:"brama-temperature" env:"BRAMA_TEMPERATURE" default:"0.2" help:"Sampling temperature, 0 to 2."`
	Auth        string `name:"brama-auth" env:"BRAMA_AUTH" default:"hmac" help:"How to authenticate: hmac (Brama), bearer (BRAMA_API_KEY_FILE) or none."`
	APIKeyFile  string `name:"brama-api-key-file" env:"BRAMA_API_KEY_FILE" help:"File holding the bearer key (required with --brama-auth bearer)."`
	MaxField    string `name:"brama-max-tokens-field" env:"BRAMA_MAX_TOKENS_FIELD" default:"max_tokens" help:"Request field of max tokens: max_tokens or max_completion_tokens."`
	Retries     string `name:"brama-retries" env:"BRAMA_RETRIES" default:"2" help:"Retries of a 429, 502, 503, 504 or refused connection within a round."`
	PricesFile  string `name:"brama-prices-file" env:"BRAMA_PRICES_FILE" help:"JSON file of per-model prices (else the two price variables)."`
	// AllowFreeModel lets a bearer gateway run a model no price is
	// known for (docs/money.md#no-free-model-by-accident).
	AllowFreeModel bool `name:"allow-free-model" env:"SINGULARITY_ALLOW_FREE_MODEL" help:"Let a bearer gateway run a model that would be charged nothing (no price in the prices file, the catalogue or the price options)."`
	CacheKey       bool `name:"brama-prompt-cache-key" env:"BRAMA_PROMPT_CACHE_KEY" help:"Send prompt_cache_key, the being's id, with every completion (providers route their prompt cache on it)."`
}

// LasFlags select and pin the skill process. The default of LAS_ONLY is
// the variable ${las_only}, which the parser must define (the command
// defines it as las.DefaultOnly, so the list is written once).
type LasFlags struct {
	Command     string `name:"las-command" env:"LAS_COMMAND" default:"node" help:"Interpreter or executable that runs Las."`
	Entrypoint  string `name:"las-mcp-entrypoint" env:"LAS_MCP_ENTRYPOINT" default:"../las/src/mcp.mjs" help:"Las entrypoint file."`
	Only        string `name:"las-only" env:"LAS_ONLY" default:"${las_only}" help:"Surfaces Las offers (empty: all)."`
	Skip        string `name:"las-skip" env:"LAS_SKIP" help:"Surfaces to exclude."`
	Manifest    string `name:"las-release-manifest-file" env:"LAS_RELEASE_MANIFEST_FILE" help:"Absolute path of the Las release manifest (required without a servers file)."`
	ManifestSig string `name:"las-release-manifest-signature-file" env:"LAS_RELEASE_MANIFEST_SIGNATURE_FILE" help:"Absolute path of the manifest signature (required without a servers file)."`
	TrustStore  string `name:"las-release-trust-store-file" env:"LAS_RELEASE_TRUST_STORE_FILE" help:"Absolute path of the release trust store (required without a servers file)."`
	Watermark   string `name:"las-release-watermark-file" env:"LAS_RELEASE_WATERMARK_FILE" help:"Absolute path of the release watermark (required without a servers file)."`
	ServersFile string `name:"las-servers-file" env:"LAS_SERVERS_FILE" help:"MCP servers file in the mcpServers format (replaces LAS_COMMAND and LAS_MCP_ENTRYPOINT)."`
	// RequiredSurfaces is nil when neither the flag nor the variable is
	// given: then none with a servers file, DefaultRequiredSurfaces for
	// the classic Las.
	RequiredSurfaces *string `name:"required-surfaces" env:"SINGULARITY_REQUIRED_SURFACES" help:"Surfaces that must expose a tool (comma list; may be empty). Unset: skarbiec,finance for the classic Las, none with a servers file."`
}

// MostFlags locate and authenticate the messaging service.
type MostFlags struct {
	BaseURL   string `name:"most-base-url" env:"MOST_BASE_URL" default:"http://127.0.0.1:8080" help:"Most base URL (http or https)."`
	TokenFile string `name:"most-service-token-file" env:"MOST_SERVICE_TOKEN_FILE" help:"File holding the Most bearer token; enables the Most tools."`
}

// LogFlags choose where and how logs are written (always stderr).
type LogFlags struct {
	Level  string `name:"log-level" env:"SINGULARITY_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Log level (debug, info, warn, error)."`
	Format string `name:"log-format" env:"SINGULARITY_LOG_FORMAT" default:"auto" enum:"auto,text,json" help:"Log format: auto (colour on a terminal), text or json."`
}
