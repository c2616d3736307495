package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision/fault"
)

// allOpen is every identity field identityDefaults may leave open.
const allOpen = state.IdentityAgentID | state.IdentityRole | state.IdentityEnvironment | state.IdentityHost |
	state.IdentityWorkloadID | state.IdentityWorkloadPublicKey | state.IdentityExecutableDigest |
	state.IdentityCodeDigest | state.IdentityPolicyDigest | state.IdentityPolicySequence

// standaloneFlags is the fixture's configuration for a gateway other than
// Brama (none) with no identity variable set but the persona, as kong
// fills it in.
func standaloneFlags(f fixture) Flags {
	flags := f.flags()
	flags.Identity = IdentityFlags{AgentName: "MyAgent", AgentTicker: "AGENT", AgentType: "general", Specialty: "general"}
	flags.Brama.Auth = "none"
	flags.Brama.Model = "llama-3"
	flags.Brama.SecretFile = ""
	return flags
}

// TestLoadStandaloneIdentity: with bearer or none the Wisent identity
// variables are optional (docs/configuration.md#identity): a random agent
// id, the documented defaults, the hostname, no digests, policy sequence
// 0, each field left open for the state to keep.
func TestLoadStandaloneIdentity(t *testing.T) {
	f := newFixture(t)
	rt, err := Load(standaloneFlags(f), noEnv)
	require.NoError(t, err)
	id := rt.Identity
	parsed, err := uuid.Parse(id.AgentID)
	require.NoError(t, err, "the agent id is a UUID: %q", id.AgentID)
	assert.Equal(t, uuid.Version(4), parsed.Version())
	assert.Equal(t, DefaultRole, id.Role)
	assert.Equal(t, DefaultEnvironment, id.Environment)
	assert.Equal(t, HostIdentifier(), id.Host)
	assert.Equal(t, DefaultWorkloadID, id.WorkloadID)
	assert.Empty(t, id.WorkloadPublicKey+id.ExecutableDigest+id.CodeDigest+id.PolicyDigest)
	assert.Zero(t, id.PolicySequence)
	assert.Equal(t, "MyAgent", id.Name)
	assert.Equal(t, allOpen, rt.IdentityOpen)

	again, err := Load(standaloneFlags(f), noEnv)
	require.NoError(t, err)
	assert.NotEqual(t, id.AgentID, again.Identity.AgentID, "each load draws a new id; the state keeps the first")

	// What is set is kept, validated, and not open.
	flags := standaloneFlags(f)
	flags.Identity.AgentID = "ada-1"
	flags.Identity.Host = "laptop"
	flags.Identity.CodeSHA256 = strings.Repeat("c", 64)
	flags.Identity.PolicySequence = "3"
	rt, err = Load(flags, noEnv)
	require.NoError(t, err)
	assert.Equal(t, "ada-1", rt.Identity.AgentID)
	assert.Equal(t, "laptop", rt.Identity.Host)
	assert.Equal(t, strings.Repeat("c", 64), rt.Identity.CodeDigest)
	assert.Equal(t, uint64(3), rt.Identity.PolicySequence)
	assert.Equal(t, allOpen&^(state.IdentityAgentID|state.IdentityHost|state.IdentityCodeDigest|state.IdentityPolicySequence), rt.IdentityOpen)

	// With bearer likewise.
	key := filepath.Join(f.dir, "api.key")
	require.NoError(t, os.WriteFile(key, []byte("sk-standalone\n"), 0o600))
	flags = standaloneFlags(f)
	flags.Brama.Auth, flags.Brama.APIKeyFile = "bearer", key
	flags.Loop.InputPerMillion, flags.Loop.OutputPerMillion = "1", "2"
	rt, err = Load(flags, noEnv)
	require.NoError(t, err)
	assert.Equal(t, allOpen, rt.IdentityOpen)
}

// TestLoadStandaloneRefusals: a variable set, even to the empty string,
// meets its rule with bearer or none as with hmac; with hmac (and with an
// unparsable BRAMA_AUTH, refused later) the variables stay required with
// the same sentences.
func TestLoadStandaloneRefusals(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		mutate func(*Flags)
		env    LookupEnv
		want   string
	}{
		{"agent id set empty", func(*Flags) {}, only("SINGULARITY_AGENT_ID"), "configuration: agent id is not a valid immutable identifier"},
		{"host set empty", func(*Flags) {}, only("SINGULARITY_HOST"), "configuration: host is not a valid immutable identifier"},
		{"digest set empty", func(*Flags) {}, only("SINGULARITY_CODE_SHA256"), "configuration: code digest must be 64 lowercase hexadecimal characters"},
		{"digest bad", func(c *Flags) { c.Identity.PolicySHA256 = "abc" }, noEnv, "configuration: policy digest must be 64 lowercase hexadecimal characters"},
		{"sequence bad", func(c *Flags) { c.Identity.PolicySequence = "x" }, noEnv, "configuration: policy sequence must be an unsigned integer"},
		{"hmac requires", func(c *Flags) { c.Brama.Auth = "hmac"; c.Brama.Model = "any" }, noEnv, "configuration: SINGULARITY_AGENT_ID is required"},
		{"hmac by default", func(c *Flags) { c.Brama.Auth = "" }, noEnv, "configuration: SINGULARITY_AGENT_ID is required"},
		{"unknown auth counts as hmac", func(c *Flags) { c.Brama.Auth = "oauth" }, noEnv, "configuration: SINGULARITY_AGENT_ID is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flags := standaloneFlags(f)
			c.mutate(&flags)
			_, err := Load(flags, c.env)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			assert.Equal(t, 2, fault.ExitCode(err))
		})
	}
}

// only is an environment in which name alone is set, to the empty string.
func only(name string) LookupEnv {
	return func(n string) (string, bool) { return "", n == name }
}

func TestHostIdentifier(t *testing.T) {
	tests := []struct{ name, want string }{
		{"laptop", "laptop"},
		{"build-01.example.org", "build-01.example.org"},
		{"Mój komputer", "M--j-komputer"},
		{"", DefaultHost},
		{"---", DefaultHost},
		{"ż", DefaultHost},
		{strings.Repeat("h", 200), strings.Repeat("h", 128)},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, hostIdentifier(tt.name), "%q", tt.name)
	}
}

// TestLoadServersFileWithoutPins: with a servers file the four release
// pins may be left unset for every command that loads the whole
// configuration (doctor, once, run), and no surface is required unless
// SINGULARITY_REQUIRED_SURFACES says so; the classic Las keeps
// skarbiec,finance.
func TestLoadServersFileWithoutPins(t *testing.T) {
	f := newFixture(t)
	servers := filepath.Join(f.dir, "servers.json")
	require.NoError(t, os.WriteFile(servers, []byte(`{"mcpServers": {}}`), 0o600))
	flags := standaloneFlags(f)
	flags.Las = LasFlags{Command: "node", Entrypoint: "../las/src/mcp.mjs", Only: "weles", ServersFile: servers}
	rt, err := Load(flags, noEnv)
	require.NoError(t, err)
	assert.Empty(t, rt.Las.Servers)
	assert.Empty(t, rt.Las.RequiredSurfaces())
	assert.Empty(t, rt.Las.ReleaseManifest+rt.Las.ReleaseManifestSignature+rt.Las.ReleaseTrustStore+rt.Las.ReleaseWatermark)

	flags.Las.RequiredSurfaces = text("memory, filesystem")
	rt, err = Load(flags, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"memory", "filesystem"}, rt.Las.RequiredSurfaces())

	// Set pins are still checked.
	flags.Las.Manifest = "relative"
	_, err = Load(flags, noEnv)
	assert.EqualError(t, err, "configuration: LAS release manifest must be an absolute regular file")

	// Without the file they stay required.
	flags = standaloneFlags(f)
	flags.Las.Manifest = ""
	_, err = Load(flags, noEnv)
	assert.EqualError(t, err, "configuration: LAS_RELEASE_MANIFEST_FILE is required")
	flags = standaloneFlags(f)
	rt, err = Load(flags, noEnv)
	require.NoError(t, err)
	assert.Equal(t, []string{"skarbiec", "finance"}, rt.Las.RequiredSurfaces())
}
