package testkit

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/wisent/singularity/internal/store/state"
)

// Hex64 is a valid digest or public key: 64 lowercase hexadecimal
// characters.
const Hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// Identity is the one test identity: a root being "Ada" that passes every
// check of the configuration. A test that needs several beings changes
// AgentID and Name of its copies.
func Identity() state.Identity {
	return state.Identity{
		AgentID: "agent-test", Name: "Ada", Ticker: "ADA", AgentType: "general", Specialty: "market research",
		Role: "worker", Environment: "test", Host: "local", WorkloadID: "wl-1",
		WorkloadPublicKey: Hex64, ExecutableDigest: Hex64, CodeDigest: Hex64, PolicyDigest: Hex64, PolicySequence: 1,
	}
}

// The files ValidEnv writes into its directory, each named by one
// variable.
const (
	LasConfigFile = "las.json"      // LAS_MCP_ENTRYPOINT, "{}"
	ManifestFile  = "manifest.json" // LAS_RELEASE_MANIFEST_FILE
	SignatureFile = "manifest.sig"  // LAS_RELEASE_MANIFEST_SIGNATURE_FILE
	TrustFile     = "trust.json"    // LAS_RELEASE_TRUST_STORE_FILE
	SecretFile    = "hmac.secret"   // BRAMA_HMAC_SECRET_FILE, 0600
	WorkspaceDir  = "workspace"     // SINGULARITY_WORKSPACE, created
	StateDir      = "state"         // SINGULARITY_STATE_DIR, not created
	WatermarkFile = "watermark"     // LAS_RELEASE_WATERMARK_FILE, not created
)

// ValidEnv writes into dir every file a valid configuration names (the
// HMAC secret file holding secret) and returns the complete, valid
// environment of the singularity binary naming them, whose identity is
// Identity. It is the one map to edit when a required configuration
// variable is added. Every other variable is left to its default: the
// Brama URL and the Las command too, so a test that runs a being sets
// BRAMA_BASE_URL and LAS_COMMAND itself.
func ValidEnv(t testing.TB, dir, secret string) map[string]string {
	t.Helper()
	files := map[string]string{
		LasConfigFile: "{}",
		ManifestFile:  `{"release":"test"}`,
		SignatureFile: "signature",
		TrustFile:     `{"keys":[]}`,
		SecretFile:    secret + "\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatalf("configuration file: %v", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, WorkspaceDir), 0o700); err != nil {
		t.Fatalf("workspace: %v", err)
	}
	id := Identity()
	return map[string]string{
		"PATH":                                os.Getenv("PATH"),
		"HOME":                                dir,
		"SINGULARITY_AGENT_ID":                id.AgentID,
		"SINGULARITY_AGENT_NAME":              id.Name,
		"SINGULARITY_AGENT_TICKER":            id.Ticker,
		"SINGULARITY_AGENT_TYPE":              id.AgentType,
		"SINGULARITY_SPECIALTY":               id.Specialty,
		"SINGULARITY_ROLE":                    id.Role,
		"SINGULARITY_ENVIRONMENT":             id.Environment,
		"SINGULARITY_HOST":                    id.Host,
		"SINGULARITY_WORKLOAD_ID":             id.WorkloadID,
		"SINGULARITY_WORKLOAD_PUBLIC_KEY":     id.WorkloadPublicKey,
		"SINGULARITY_EXECUTABLE_SHA256":       id.ExecutableDigest,
		"SINGULARITY_CODE_SHA256":             id.CodeDigest,
		"SINGULARITY_POLICY_SHA256":           id.PolicyDigest,
		"SINGULARITY_POLICY_SEQUENCE":         strconv.FormatUint(id.PolicySequence, 10),
		"SINGULARITY_STATE_DIR":               filepath.Join(dir, StateDir),
		"SINGULARITY_WORKSPACE":               filepath.Join(dir, WorkspaceDir),
		"LAS_MCP_ENTRYPOINT":                  filepath.Join(dir, LasConfigFile),
		"LAS_RELEASE_MANIFEST_FILE":           filepath.Join(dir, ManifestFile),
		"LAS_RELEASE_MANIFEST_SIGNATURE_FILE": filepath.Join(dir, SignatureFile),
		"LAS_RELEASE_TRUST_STORE_FILE":        filepath.Join(dir, TrustFile),
		"LAS_RELEASE_WATERMARK_FILE":          filepath.Join(dir, WatermarkFile),
		"BRAMA_HMAC_SECRET_FILE":              filepath.Join(dir, SecretFile),
	}
}

// Environ turns an environment map into an exec.Cmd's Env, sorted; it is
// the child's whole environment.
func Environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
