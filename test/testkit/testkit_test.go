package testkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// TestValidEnvNamesItsFiles: every file and directory ValidEnv names
// that must exist does, the secret file holds the secret and only its
// owner may read it, and the identity variables are Identity's. (That the
// binary accepts ValidEnv is test/cli's TestSecretFromEnvironmentNeverPrinted
// and TestDoctorSucceeds; that the being it runs has exactly Identity,
// test/e2e's TestOnceScriptedCycle.)
func TestValidEnvNamesItsFiles(t *testing.T) {
	dir := t.TempDir()
	env := testkit.ValidEnv(t, dir, "kit-secret")
	for _, k := range []string{"LAS_MCP_ENTRYPOINT", "LAS_RELEASE_MANIFEST_FILE", "LAS_RELEASE_MANIFEST_SIGNATURE_FILE", "LAS_RELEASE_TRUST_STORE_FILE", "BRAMA_HMAC_SECRET_FILE"} {
		info, err := os.Stat(env[k])
		require.NoError(t, err, k)
		assert.True(t, info.Mode().IsRegular(), k)
	}
	info, err := os.Stat(env["SINGULARITY_WORKSPACE"])
	require.NoError(t, err)
	assert.True(t, info.IsDir())
	secret, err := os.ReadFile(env["BRAMA_HMAC_SECRET_FILE"])
	require.NoError(t, err)
	assert.Equal(t, "kit-secret\n", string(secret))
	info, err = os.Stat(env["BRAMA_HMAC_SECRET_FILE"])
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&0o077, "the secret file is the owner's alone")
	id := testkit.Identity()
	assert.Equal(t, id.AgentID, env["SINGULARITY_AGENT_ID"])
	assert.Equal(t, id.Name, env["SINGULARITY_AGENT_NAME"])
	assert.Equal(t, testkit.Hex64, env["SINGULARITY_CODE_SHA256"])
	assert.Equal(t, filepath.Join(dir, testkit.StateDir), env["SINGULARITY_STATE_DIR"])
}

func TestEvents(t *testing.T) {
	events := []state.Event{{Type: state.EventStarted}, {Type: state.EventCycleStarted}, {Type: state.EventCycleStarted}}
	assert.Equal(t, 2, testkit.Count(events, state.EventCycleStarted))
	assert.Equal(t, 0, testkit.Count(events, state.EventStopped))
	assert.Equal(t, []string{state.EventStarted, state.EventCycleStarted, state.EventCycleStarted}, testkit.Types(events))
}

func TestLastLine(t *testing.T) {
	assert.Equal(t, "b\n", testkit.LastLine("a\nb\n\n"))
	assert.Equal(t, "a\n", testkit.LastLine("a"))
}
