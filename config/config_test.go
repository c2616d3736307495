package config

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/testkit"
)

// fixture is a directory holding every file a valid configuration names.
type fixture struct {
	dir, entry, manifest, signature, trust, secret, token string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{dir: dir}
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	f.entry = write("mcp.mjs", "// las\n", 0o644)
	f.manifest = write("manifest.json", "{}", 0o644)
	f.signature = write("manifest.sig", "sig", 0o644)
	f.trust = write("trust.json", "{}", 0o644)
	f.secret = write("hmac.secret", "s3cr3t-value\r\n", 0o600)
	f.token = write("most.token", "most-token-value\n", 0o600)
	return f
}

// flags returns a configuration that passes validation, with every default
// of docs/configuration.md#variables as kong would fill it in.
func (f fixture) flags() Flags {
	return Flags{
		Identity: IdentityFlags{
			AgentID: "agent-1", AgentName: "MyAgent", AgentTicker: "AGENT", AgentType: "general", Specialty: "general",
			Role: "worker", Environment: "test", Host: "localhost", WorkloadID: "wl.1:a",
			WorkloadPublicKey: testkit.Hex64, ExecutableSHA256: testkit.Hex64, CodeSHA256: testkit.Hex64, PolicySHA256: testkit.Hex64, PolicySequence: "7",
		},
		Loop: LoopFlags{
			StartingBalance: "10", InstancePerHour: "0", InputPerMillion: "0", OutputPerMillion: "0",
			CycleInterval: "5", MaxToolRounds: "8", StateDir: filepath.Join(f.dir, "state"), Workspace: f.dir,
			HTTPTimeout: "120", MCPTimeout: "120", ShutdownGrace: "10", ContextMessages: "200", CheckpointEvents: "256",
			ChildFunding: "transfer", MinCompletion: "256",
		},
		Brama: BramaFlags{BaseURL: "http://127.0.0.1:8081", Model: "any", SecretFile: f.secret, MaxTokens: "2048", Temperature: "0.2"},
		Las: LasFlags{
			Command: "node", Entrypoint: f.entry, Only: "weles,skarbiec,finance", Manifest: f.manifest,
			ManifestSig: f.signature, TrustStore: f.trust, Watermark: filepath.Join(f.dir, "watermark"),
		},
		Most: MostFlags{BaseURL: "http://127.0.0.1:8080"},
	}
}

func noEnv(string) (string, bool) { return "", false }

// text is a value given for an optional variable.
func text(s string) *string { return &s }

// setEmpty is an environment in which every variable is set, to the empty
// string: what the flags hold empty was given empty, not left unset.
func setEmpty(string) (string, bool) { return "", true }

func TestLoadValid(t *testing.T) {
	f := newFixture(t)
	rt, err := Load(f.flags(), noEnv)
	require.NoError(t, err)
	assert.Equal(t, "agent-1", rt.Identity.AgentID)
	assert.Equal(t, uint64(7), rt.Identity.PolicySequence)
	assert.Equal(t, "10", rt.StartingBalance.String())
	assert.Equal(t, 8, rt.MaxToolRounds)
	assert.Equal(t, []string{"skarbiec", "finance"}, rt.Las.RequiredSurfaces())
	assert.Equal(t, "s3cr3t-value", string(rt.Brama.Secret.Reveal()))
	assert.False(t, rt.Most.Enabled())
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", rt, rt, rt), "s3cr3t-value")
}

func TestLoadRefusals(t *testing.T) {
	f := newFixture(t)
	notDir := filepath.Join(f.dir, "manifest.json")
	cases := []struct {
		name   string
		mutate func(*Flags)
		want   string
	}{
		{"agent id empty", func(c *Flags) { c.Identity.AgentID = "" }, "configuration: agent id is not a valid immutable identifier"},
		{"agent id bad char", func(c *Flags) { c.Identity.AgentID = "a b" }, "configuration: agent id is not a valid immutable identifier"},
		{"agent id too long", func(c *Flags) { c.Identity.AgentID = strings.Repeat("a", 129) }, "configuration: agent id is not a valid immutable identifier"},
		{"role", func(c *Flags) { c.Identity.Role = "r/1" }, "configuration: role is not a valid immutable identifier"},
		{"environment", func(c *Flags) { c.Identity.Environment = "" }, "configuration: environment is not a valid immutable identifier"},
		{"host", func(c *Flags) { c.Identity.Host = "héte" }, "configuration: host is not a valid immutable identifier"},
		{"workload id", func(c *Flags) { c.Identity.WorkloadID = "" }, "configuration: workload id is not a valid immutable identifier"},
		{"public key upper", func(c *Flags) { c.Identity.WorkloadPublicKey = strings.ToUpper(testkit.Hex64) }, "configuration: workload public key must be 64 lowercase hexadecimal characters"},
		{"executable short", func(c *Flags) { c.Identity.ExecutableSHA256 = testkit.Hex64[:63] }, "configuration: executable digest must be 64 lowercase hexadecimal characters"},
		{"code digest", func(c *Flags) { c.Identity.CodeSHA256 = "" }, "configuration: code digest must be 64 lowercase hexadecimal characters"},
		{"policy digest", func(c *Flags) { c.Identity.PolicySHA256 = testkit.Hex64[:63] + "g" }, "configuration: policy digest must be 64 lowercase hexadecimal characters"},
		{"policy sequence", func(c *Flags) { c.Identity.PolicySequence = "-1" }, "configuration: policy sequence must be an unsigned integer"},
		{"balance negative", func(c *Flags) { c.Loop.StartingBalance = "-0.01" }, "configuration: prices and balance cannot be negative"},
		{"instance negative", func(c *Flags) { c.Loop.InstancePerHour = "-1" }, "configuration: prices and balance cannot be negative"},
		{"input negative", func(c *Flags) { c.Loop.InputPerMillion = "-3" }, "configuration: prices and balance cannot be negative"},
		{"output negative", func(c *Flags) { c.Loop.OutputPerMillion = "-1e-9" }, "configuration: prices and balance cannot be negative"},
		{"balance out of range", func(c *Flags) { c.Loop.StartingBalance = "1e400" }, "configuration: starting balance is out of range"},
		{"input out of range", func(c *Flags) { c.Loop.InputPerMillion = "1e99999999999999999999" }, "configuration: input price is out of range"},
		{"spend limit out of range", func(c *Flags) { c.Loop.SpendLimit = "123456789012345678901234567890123456789012345" }, "configuration: spend limit is out of range"},
		{"max tool rounds zero", func(c *Flags) { c.Loop.MaxToolRounds = "0" }, "configuration: max tool rounds must be positive"},
		{"checkpoint events zero", func(c *Flags) { c.Loop.CheckpointEvents = "0" }, "configuration: checkpoint events must be a positive integer"},
		{"child funding", func(c *Flags) { c.Loop.ChildFunding = "gift" }, "configuration: child funding must be transfer or mint"},
		{"prompt layout", func(c *Flags) { c.Loop.PromptLayout = "cached" }, "configuration: prompt layout must be seed or stable"},
		{"min completion zero", func(c *Flags) { c.Loop.MinCompletion = "0" }, "configuration: min completion tokens must be a positive integer"},
		{"min completion text", func(c *Flags) { c.Loop.MinCompletion = "many" }, "configuration: min completion tokens must be a positive integer"},
		{"spend limit zero", func(c *Flags) { c.Loop.SpendLimit = "0" }, "configuration: spend limit must be a decimal above zero"},
		{"spend limit text", func(c *Flags) { c.Loop.SpendLimit = "lots" }, "configuration: spend limit must be a decimal above zero"},
		{"family spend limit negative", func(c *Flags) { c.Loop.FamilySpendLimit = "-1" }, "configuration: family spend limit must be a decimal above zero"},
		{"workspace missing", func(c *Flags) { c.Loop.Workspace = filepath.Join(f.dir, "nope") }, "configuration: workspace: no such file or directory"},
		{"workspace not dir", func(c *Flags) { c.Loop.Workspace = notDir }, "configuration: workspace must be a directory"},
		{"stimulus too long", func(c *Flags) { c.Loop.Stimulus = strings.Repeat("x", MaxStimulusBytes+1) }, "configuration: stimulus must be at most 65536 bytes and contain no NUL"},
		{"stimulus NUL", func(c *Flags) { c.Loop.Stimulus = "a\x00b" }, "configuration: stimulus must be at most 65536 bytes and contain no NUL"},
		{"brama scheme", func(c *Flags) { c.Brama.BaseURL = "ftp://x" }, "configuration: BRAMA_BASE_URL must use http or https"},
		{"brama unparsable", func(c *Flags) { c.Brama.BaseURL = "http://[::1" }, `configuration: BRAMA_BASE_URL: missing ']' in host`},
		{"temperature high", func(c *Flags) { c.Brama.Temperature = "2.5" }, "configuration: temperature must be finite and between zero and two"},
		{"temperature NaN", func(c *Flags) { c.Brama.Temperature = "NaN" }, "configuration: temperature must be finite and between zero and two"},
		{"temperature negative", func(c *Flags) { c.Brama.Temperature = "-0.1" }, "configuration: temperature must be finite and between zero and two"},
		{"entrypoint missing", func(c *Flags) { c.Las.Entrypoint = "../las/src/mcp.mjs" }, "configuration: LAS entrypoint not found: ../las/src/mcp.mjs"},
		{"manifest relative", func(c *Flags) { c.Las.Manifest = "manifest.json" }, "configuration: LAS release manifest must be an absolute regular file"},
		{"manifest missing", func(c *Flags) { c.Las.Manifest = "" }, "configuration: LAS release manifest must be an absolute regular file"},
		{"signature dir", func(c *Flags) { c.Las.ManifestSig = f.dir }, "configuration: LAS release manifest signature must be an absolute regular file"},
		{"trust store", func(c *Flags) { c.Las.TrustStore = filepath.Join(f.dir, "none") }, "configuration: LAS release trust store must be an absolute regular file"},
		{"watermark relative", func(c *Flags) { c.Las.Watermark = "wm" }, "configuration: LAS release watermark must be an absolute path"},
		{"most scheme", func(c *Flags) { c.Most.BaseURL = "unix:///sock" }, "configuration: MOST_BASE_URL must use http or https"},
		{"most unparsable", func(c *Flags) { c.Most.BaseURL = "http://a b" }, `configuration: MOST_BASE_URL: invalid character " " in host name`},
		{"debug remote", func(c *Flags) { c.DebugAddr = "0.0.0.0:6060" }, "configuration: debug address must be loopback"},
		{"debug all interfaces", func(c *Flags) { c.DebugAddr = ":6060" }, "configuration: debug address must be loopback"},
		{"no secret", func(c *Flags) { c.Brama.SecretFile = "" }, "secret file: BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flags := f.flags()
			c.mutate(&flags)
			_, err := Load(flags, setEmpty)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
		})
	}
}

// TestLoadRequired: a required variable that is not set at all is named
// (docs/configuration.md#validation-sentences); set but empty it meets its
// rule's sentence (TestLoadRefusals).
func TestLoadRequired(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		mutate func(*Flags)
		want   string
	}{
		{func(c *Flags) { c.Identity.AgentID = "" }, "configuration: SINGULARITY_AGENT_ID is required"},
		{func(c *Flags) { c.Identity.Role = "" }, "configuration: SINGULARITY_ROLE is required"},
		{func(c *Flags) { c.Identity.Environment = "" }, "configuration: SINGULARITY_ENVIRONMENT is required"},
		{func(c *Flags) { c.Identity.Host = "" }, "configuration: SINGULARITY_HOST is required"},
		{func(c *Flags) { c.Identity.WorkloadID = "" }, "configuration: SINGULARITY_WORKLOAD_ID is required"},
		{func(c *Flags) { c.Identity.WorkloadPublicKey = "" }, "configuration: SINGULARITY_WORKLOAD_PUBLIC_KEY is required"},
		{func(c *Flags) { c.Identity.ExecutableSHA256 = "" }, "configuration: SINGULARITY_EXECUTABLE_SHA256 is required"},
		{func(c *Flags) { c.Identity.CodeSHA256 = "" }, "configuration: SINGULARITY_CODE_SHA256 is required"},
		{func(c *Flags) { c.Identity.PolicySHA256 = "" }, "configuration: SINGULARITY_POLICY_SHA256 is required"},
		{func(c *Flags) { c.Identity.PolicySequence = "" }, "configuration: SINGULARITY_POLICY_SEQUENCE is required"},
		{func(c *Flags) { c.Las.Manifest = "" }, "configuration: LAS_RELEASE_MANIFEST_FILE is required"},
		{func(c *Flags) { c.Las.ManifestSig = "" }, "configuration: LAS_RELEASE_MANIFEST_SIGNATURE_FILE is required"},
		{func(c *Flags) { c.Las.TrustStore = "" }, "configuration: LAS_RELEASE_TRUST_STORE_FILE is required"},
		{func(c *Flags) { c.Las.Watermark = "" }, "configuration: LAS_RELEASE_WATERMARK_FILE is required"},
		// Nothing set at all: the first required variable is named.
		{func(c *Flags) { c.Identity = IdentityFlags{}; c.Las.Manifest = "" }, "configuration: SINGULARITY_AGENT_ID is required"},
	}
	for _, c := range cases {
		flags := f.flags()
		c.mutate(&flags)
		_, err := Load(flags, noEnv)
		require.Error(t, err, c.want)
		assert.Equal(t, c.want, err.Error())
		assert.Equal(t, 2, fault.ExitCode(err))
	}
}

// TestLoadGateways covers the stage-2 Brama variables
// (docs/brama.md#other-openai-compatible-gateways).
func TestLoadGateways(t *testing.T) {
	f := newFixture(t)
	key := filepath.Join(f.dir, "api.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-live-123\n"), 0o600))
	pricesFile := filepath.Join(f.dir, "prices.json")
	require.NoError(t, os.WriteFile(pricesFile, []byte(`{"gpt-small":{"input_usd_per_million":"0.15","output_usd_per_million":"0.6"}}`), 0o600))
	badPrices := filepath.Join(f.dir, "bad-prices.json")
	require.NoError(t, os.WriteFile(badPrices, []byte(`{"gpt-small":{"input_usd_per_million":"-1","output_usd_per_million":"0.6"}}`), 0o600))

	bearer := func(c *Flags) {
		c.Brama.Auth = "bearer"
		c.Brama.APIKeyFile = key
		c.Brama.Model = "gpt-small"
		c.Brama.SecretFile = ""
		c.Brama.PricesFile = pricesFile
	}
	rt, err := Load(withFlags(f.flags(), bearer), noEnv)
	require.NoError(t, err)
	assert.Equal(t, gateway.AuthBearer, rt.Brama.Auth)
	assert.Equal(t, "sk-live-123", string(rt.Brama.APIKey.Reveal()))
	assert.False(t, rt.Brama.Secret.IsSet(), "no HMAC secret is needed or read")
	assert.Equal(t, 2, rt.Brama.Retries)
	assert.Equal(t, gateway.FieldMaxTokens, rt.Brama.MaxTokensField)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", rt, rt, rt), "sk-live-123")

	none := func(c *Flags) {
		c.Brama.Auth = "none"
		c.Brama.Model = "llama-3"
		c.Brama.SecretFile = ""
		c.Brama.MaxField = "max_completion_tokens"
		c.Brama.Retries = "0"
		c.Brama.PricesFile = pricesFile
	}
	rt, err = Load(withFlags(f.flags(), none), noEnv)
	require.NoError(t, err)
	assert.Equal(t, gateway.AuthNone, rt.Brama.Auth)
	assert.False(t, rt.Brama.APIKey.IsSet())
	assert.Equal(t, gateway.FieldMaxCompletionTokens, rt.Brama.MaxTokensField)
	assert.Equal(t, 0, rt.Brama.Retries)
	assert.Equal(t, "0.6", rt.Brama.Prices.File["gpt-small"].Output.String())

	refusals := []struct {
		mutate func(*Flags)
		want   string
	}{
		{func(c *Flags) { c.Brama.Auth = "oauth" }, "configuration: BRAMA_AUTH must be hmac, bearer or none"},
		{func(c *Flags) { bearer(c); c.Brama.Model = "any" }, "configuration: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
		{func(c *Flags) { none(c); c.Brama.Model = "task:code" }, "configuration: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
		{func(c *Flags) { none(c); c.Brama.Model = "best" }, "configuration: BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac"},
		{func(c *Flags) { bearer(c); c.Brama.APIKeyFile = "" }, "secret file: BRAMA_API_KEY_FILE is required when BRAMA_AUTH is bearer"},
		{func(c *Flags) { bearer(c); c.Brama.APIKeyFile = f.entry }, "secret file: " + f.entry + " must not be group/world accessible"},
		{func(c *Flags) { c.Brama.MaxField = "max_output_tokens" }, "configuration: BRAMA_MAX_TOKENS_FIELD must be max_tokens or max_completion_tokens"},
		{func(c *Flags) { c.Brama.Retries = "-1" }, "configuration: BRAMA_RETRIES must be an unsigned integer"},
		{func(c *Flags) { c.Brama.PricesFile = filepath.Join(f.dir, "none.json") }, "configuration: BRAMA_PRICES_FILE: " + filepath.Join(f.dir, "none.json") + ": no such file or directory"},
		{func(c *Flags) { c.Brama.PricesFile = badPrices }, `configuration: BRAMA_PRICES_FILE: model "gpt-small": input_usd_per_million cannot be negative`},
		{func(c *Flags) { c.Brama.PricesFile = f.signature }, `configuration: BRAMA_PRICES_FILE: must be a JSON object of model prices`},
	}
	for _, c := range refusals {
		_, err := Load(withFlags(f.flags(), c.mutate), noEnv)
		require.Error(t, err, c.want)
		assert.Equal(t, c.want, err.Error())
		assert.Equal(t, 2, fault.ExitCode(err))
		assert.NotContains(t, err.Error(), "sk-live-123")
	}
}

func withFlags(f Flags, mutate func(*Flags)) Flags {
	mutate(&f)
	return f
}

func TestLoadOrderIdentityBeforeSecrets(t *testing.T) {
	f := newFixture(t)
	flags := f.flags()
	flags.Brama.SecretFile = ""
	flags.Identity.AgentID = ""
	flags.Las.Manifest = "relative"
	_, err := Load(flags, setEmpty)
	assert.EqualError(t, err, "configuration: agent id is not a valid immutable identifier")
	flags.Identity.AgentID = "ok"
	_, err = Load(flags, setEmpty)
	assert.EqualError(t, err, "configuration: LAS release manifest must be an absolute regular file")
}

func TestLoadAcceptsEdges(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		mutate func(*Flags)
		check  func(*testing.T, Runtime)
	}{
		{"temperature bounds", func(c *Flags) { c.Brama.Temperature = "2" }, func(t *testing.T, rt Runtime) { assert.Equal(t, 2.0, rt.Brama.Temperature) }},
		{"stimulus trimmed", func(c *Flags) { c.Loop.Stimulus = "  look  \n" }, func(t *testing.T, rt Runtime) { assert.Equal(t, "look", rt.Stimulus) }},
		{"stimulus blank is unset", func(c *Flags) { c.Loop.Stimulus = " \t " }, func(t *testing.T, rt Runtime) { assert.Empty(t, rt.Stimulus) }},
		{"stimulus at bound", func(c *Flags) { c.Loop.Stimulus = strings.Repeat("x", MaxStimulusBytes) }, func(t *testing.T, rt Runtime) { assert.Len(t, rt.Stimulus, MaxStimulusBytes) }},
		{"required surfaces empty", func(c *Flags) { c.Las.RequiredSurfaces = text("") }, func(t *testing.T, rt Runtime) { assert.Empty(t, rt.Las.RequiredSurfaces()) }},
		{"required surfaces blanks dropped", func(c *Flags) { c.Las.RequiredSurfaces = text(" a, ,b ,") }, func(t *testing.T, rt Runtime) { assert.Equal(t, []string{"a", "b"}, rt.Las.RequiredSurfaces()) }},
		{"identifier charset", func(c *Flags) { c.Identity.AgentID = "A-z_0.9:x" }, func(t *testing.T, rt Runtime) { assert.Equal(t, "A-z_0.9:x", rt.Identity.AgentID) }},
		{"identifier 128", func(c *Flags) { c.Identity.Role = strings.Repeat("r", 128) }, func(t *testing.T, rt Runtime) { assert.Len(t, rt.Identity.Role, 128) }},
		{"debug loopback v6", func(c *Flags) { c.DebugAddr = "[::1]:0" }, func(t *testing.T, rt Runtime) { assert.Equal(t, "[::1]:0", rt.DebugAddr) }},
		{"debug localhost", func(c *Flags) { c.DebugAddr = "localhost:6060" }, func(t *testing.T, rt Runtime) { assert.Equal(t, "localhost:6060", rt.DebugAddr) }},
		{"debug remote allowed", func(c *Flags) { c.DebugAddr = "0.0.0.0:6060"; c.DebugAllow = true }, func(t *testing.T, rt Runtime) { assert.True(t, rt.DebugAllowRemote) }},
		{"most enabled", func(c *Flags) { c.Most.TokenFile = f.token }, func(t *testing.T, rt Runtime) {
			assert.True(t, rt.Most.Enabled())
			assert.Equal(t, "most-token-value", string(rt.Most.Token.Reveal()))
		}},
		{"prices exact", func(c *Flags) { c.Loop.InputPerMillion = "0.150000000000000000001" }, func(t *testing.T, rt Runtime) {
			assert.Equal(t, "0.150000000000000000001", rt.InputPerMillion.String())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flags := f.flags()
			c.mutate(&flags)
			rt, err := Load(flags, noEnv)
			require.NoError(t, err)
			c.check(t, rt)
		})
	}
}

func TestSecretFromEnvironment(t *testing.T) {
	f := newFixture(t)
	flags := f.flags()
	flags.Brama.SecretFile = ""
	env := func(name string) (string, bool) {
		if name == AuthSecretEnv {
			return "env-secret", true
		}
		return "", false
	}
	rt, err := Load(flags, env)
	require.NoError(t, err)
	assert.Equal(t, "env-secret", string(rt.Brama.Secret.Reveal()))

	empty := func(name string) (string, bool) { return "", name == AuthSecretEnv }
	_, err = Load(flags, empty)
	assert.EqualError(t, err, "secret file: BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required")
}

func TestSecretFileRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	group := write("group", "topsecret", 0o640)
	world := write("world", "topsecret", 0o604)
	empty := write("empty", "\r\n\n", 0o600)
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, mkfifo(fifo))
	missing := filepath.Join(dir, "missing")
	large := write("large", strings.Repeat("topsecret", MaxSecretFileBytes/9+1), 0o600)
	zero := filepath.Join(dir, "zero")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	cases := []struct{ path, want string }{
		{dir, "secret file: not a regular file: " + dir},
		{zero, "secret file: not a regular file: " + zero},
		{large, "secret file: " + large + " is larger than the 64 KiB cap"},
		{fifo, "secret file: not a regular file: " + fifo},
		{group, "secret file: " + group + " must not be group/world accessible"},
		{world, "secret file: " + world + " must not be group/world accessible"},
		{empty, "secret file: " + empty + " is empty"},
		{missing, "secret file: " + missing + ": no such file or directory"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			_, err := ReadSecretFile(c.path)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
			assert.NotContains(t, err.Error(), "topsecret")
		})
	}
	_, err := ReadSecretFile(missing)
	assert.ErrorIs(t, err, fs.ErrNotExist, "the OS error stays the cause")
	ok := write("ok", "value\r\n\r\n", 0o400)
	s, err := ReadSecretFile(ok)
	require.NoError(t, err)
	assert.Equal(t, "value", string(s.Reveal()))
}

// TestTiersFile: SINGULARITY_TIERS_FILE is read into the runtime's tiers,
// and a file that cannot be read or is not a tiers list is refused with
// its sentence, exit 2.
func TestTiersFile(t *testing.T) {
	f := newFixture(t)
	good := filepath.Join(f.dir, "tiers.json")
	require.NoError(t, os.WriteFile(good, []byte(`[{"below_usd": "1", "model": "cheap", "max_tool_rounds": 2}]`), 0o600))
	rt, err := Load(withFlags(f.flags(), func(c *Flags) { c.Loop.TiersFile = good }), noEnv)
	require.NoError(t, err)
	require.Len(t, rt.Tiers, 1)
	assert.Equal(t, "cheap", rt.Tiers[0].Model)

	bad := filepath.Join(f.dir, "bad-tiers.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"below_usd": "1", "disabled": true}]`), 0o600))
	for file, want := range map[string]string{
		filepath.Join(f.dir, "none.json"): "configuration: SINGULARITY_TIERS_FILE: " + filepath.Join(f.dir, "none.json") + ": no such file or directory",
		bad:                               `configuration: SINGULARITY_TIERS_FILE: tier 1: unknown field "disabled"`,
	} {
		_, err := Load(withFlags(f.flags(), func(c *Flags) { c.Loop.TiersFile = file }), noEnv)
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
		assert.Equal(t, 2, fault.ExitCode(err))
	}
}

// TestTierModelNeedsAPrice: with BRAMA_PRICES_FILE, a tier that switches to
// a model id the file does not list is refused (exit 2); a selector, a
// tier without a model and a listed model are not, nor is any tier model
// without a prices file.
func TestTierModelNeedsAPrice(t *testing.T) {
	f := newFixture(t)
	prices := filepath.Join(f.dir, "prices.json")
	require.NoError(t, os.WriteFile(prices, []byte(`{"cheap": {"input_usd_per_million": "0.1", "output_usd_per_million": "0.4"}}`), 0o600))
	write := func(text string) string {
		path := filepath.Join(f.dir, "tiers.json")
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	load := func(tiersFile, pricesFile string) error {
		_, err := Load(withFlags(f.flags(), func(c *Flags) { c.Loop.TiersFile, c.Brama.PricesFile = tiersFile, pricesFile }), noEnv)
		return err
	}
	ok := write(`[{"below_usd": "5"}, {"below_usd": "2", "model": "any"}, {"below_usd": "1", "model": "cheap"}]`)
	require.NoError(t, load(ok, prices))
	unpriced := write(`[{"below_usd": "5", "model": "cheap"}, {"below_usd": "1", "model": "cheaper"}]`)
	require.NoError(t, load(unpriced, ""), "without a prices file every model pays the two variables")
	err := load(unpriced, prices)
	require.Error(t, err)
	assert.Equal(t, `configuration: SINGULARITY_TIERS_FILE: tier 2: model "cheaper" has no price in BRAMA_PRICES_FILE`, err.Error())
	assert.Equal(t, 2, fault.ExitCode(err))
}

// TestFreeModel: on a bearer gateway, a model that would be charged
// nothing for its prompt or its completion, the configured one or a
// tier's, is refused with the sentence that says how to price it (exit
// 2), unless AllowFreeModel; a model the catalogue prices, or the price
// options price, runs; a keyless server may run free.
func TestFreeModel(t *testing.T) {
	f := newFixture(t)
	key := filepath.Join(f.dir, "api.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-live-123\n"), 0o600))
	pricesFile := filepath.Join(f.dir, "prices.json")
	require.NoError(t, os.WriteFile(pricesFile, []byte(`{"half": {"input_usd_per_million": "1", "output_usd_per_million": "0"}, "gpt-4o": {"input_usd_per_million": "9", "output_usd_per_million": "9"}}`), 0o600))
	tiersFile := filepath.Join(f.dir, "tiers.json")
	require.NoError(t, os.WriteFile(tiersFile, []byte(`[{"below_usd": "1", "model": "my-local-model"}]`), 0o600))
	cases := []struct {
		name   string
		mutate func(*Flags)
		want   string // "" loads
	}{
		{"unpriced", func(c *Flags) {}, "configuration: model my-local-model has no price: add it to the prices file (singularity prices my-local-model) or set --allow-free-model"},
		{"allowed", func(c *Flags) { c.Brama.AllowFreeModel = true }, ""},
		{"keyless", func(c *Flags) { c.Brama.Auth, c.Brama.APIKeyFile = "none", "" }, ""},
		{"priced by the options", func(c *Flags) { c.Loop.InputPerMillion, c.Loop.OutputPerMillion = "1", "2" }, ""},
		{"half priced by the options", func(c *Flags) { c.Loop.InputPerMillion = "1" }, "configuration: model my-local-model has no price: add it to the prices file (singularity prices my-local-model) or set --allow-free-model"},
		{"half priced by the file", func(c *Flags) { c.Brama.Model, c.Brama.PricesFile = "half", pricesFile }, "configuration: model half has no price: add it to the prices file (singularity prices half) or set --allow-free-model"},
		{"priced by the catalogue", func(c *Flags) { c.Brama.Model = "gpt-4o-mini" }, ""},
		{"priced by the file", func(c *Flags) { c.Brama.Model, c.Brama.PricesFile = "gpt-4o", pricesFile }, ""},
		{"an unpriced tier", func(c *Flags) { c.Brama.Model, c.Loop.TiersFile = "gpt-4o-mini", tiersFile }, "configuration: model my-local-model has no price: add it to the prices file (singularity prices my-local-model) or set --allow-free-model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt, err := Load(withFlags(f.flags(), func(fl *Flags) {
				fl.Brama.Auth, fl.Brama.APIKeyFile, fl.Brama.SecretFile, fl.Brama.Model = "bearer", key, "", "my-local-model"
				c.mutate(fl)
			}), noEnv)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
			assert.False(t, rt.RequirePrice())
		})
	}
	rt, err := Load(withFlags(f.flags(), func(fl *Flags) {
		fl.Brama.Auth, fl.Brama.APIKeyFile, fl.Brama.SecretFile, fl.Brama.Model, fl.Brama.PricesFile = "bearer", key, "", "gpt-4o", pricesFile
	}), noEnv)
	require.NoError(t, err)
	assert.True(t, rt.RequirePrice())
	p, source := rt.Brama.Prices.Charge("gpt-4o", rt.OptionPrices())
	assert.Equal(t, prices.FromFile, source, "the prices file overrides the catalogue")
	assert.Equal(t, "9", p.Input.String())
	p, source = rt.Brama.Prices.Charge("gpt-4o-mini", rt.OptionPrices())
	assert.Equal(t, prices.FromCatalogue, source)
	assert.Equal(t, "0.15", p.Input.String())
}
