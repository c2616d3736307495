package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// TestUnpricedModelRefusedOnBearer: on a bearer gateway, once, run and
// doctor refuse a model no price is known for (not in the prices file,
// not in the catalogue, the price options at 0) with the sentence that
// says how to price it, exit 2, before anything starts; the flag and the
// variable of --allow-free-model let doctor pass, and say so in one line,
// as a keyless server does without them
// (docs/money.md#no-free-model-by-accident).
func TestUnpricedModelRefusedOnBearer(t *testing.T) {
	const apiKey = "sk-free-model-key"
	w := newWorld(t)
	keyFile := filepath.Join(w.dir, "api.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600))
	srv := bramatest.Start(t, bramatest.Config{Auth: "bearer", APIKey: []byte(apiKey), Models: []string{"my-local-model"}})
	env := doctorEnv(t, w, srv, "{}")
	delete(env, "BRAMA_HMAC_SECRET_FILE")
	env["BRAMA_AUTH"], env["BRAMA_MODEL"], env["BRAMA_API_KEY_FILE"] = "bearer", "my-local-model", keyFile
	const refusal = "singularity: configuration: model my-local-model has no price: add it to the prices file (singularity prices my-local-model) or set --allow-free-model\n"
	for _, command := range []string{"once", "run", "doctor"} {
		r := run(t, env, command)
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Equal(t, refusal, r.stderr, command)
		assert.Empty(t, r.stdout)
		stateUntouched(t, env)
	}
	assert.Empty(t, srv.Requests(), "nothing reached the gateway")

	const allowed = "doctor: model my-local-model has no price and runs free: --allow-free-model is set\n"
	r := run(t, env, "doctor", "--allow-free-model")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, allowed)
	env["SINGULARITY_ALLOW_FREE_MODEL"] = "true"
	r = run(t, env, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, allowed)

	keyless := bramatest.Start(t, bramatest.Config{Auth: "none", Models: []string{"my-local-model"}})
	delete(env, "SINGULARITY_ALLOW_FREE_MODEL")
	delete(env, "BRAMA_API_KEY_FILE")
	env["BRAMA_AUTH"], env["BRAMA_BASE_URL"] = "none", keyless.URL
	r = run(t, env, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "doctor: model my-local-model has no price and runs free: a keyless (none) server\n")

	// With a servers file, as init writes one, it says so too.
	dir := t.TempDir()
	lasConfig := filepath.Join(dir, "lab.json")
	require.NoError(t, os.WriteFile(lasConfig, []byte("{}"), 0o600))
	servers, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"lab": map[string]any{"command": testkit.ExampleLas(t), "args": []string{lasConfig}},
	}})
	require.NoError(t, err)
	env["LAS_SERVERS_FILE"] = filepath.Join(dir, "servers.json")
	require.NoError(t, os.WriteFile(env["LAS_SERVERS_FILE"], servers, 0o600))
	r = run(t, env, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"servers":[{"name":"lab"`)
	assert.Contains(t, r.stderr, "doctor: model my-local-model has no price and runs free: a keyless (none) server\n")

	// A keyless server without a model list, as once and run need none:
	// doctor passes, and says the model went unchecked.
	unlisted := bramatest.Start(t, bramatest.Config{Auth: "none", NoModelList: true})
	unlisted.Enqueue(bramatest.TextReply("Resting.", chat.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}))
	env["BRAMA_BASE_URL"] = unlisted.URL
	r = run(t, env, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"ok":true`)
	assert.Contains(t, r.stderr, "doctor: model my-local-model not checked: the gateway has no model list (HTTP 404: not found)\n")
	assert.Contains(t, r.stderr, "doctor: model my-local-model has no price and runs free: a keyless (none) server\n")
	r = run(t, env, "once")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"status": "completed"`)

	// A bearer server without one still fails doctor on anything else
	// than a 404: a refused key is no missing list.
	keyed := bramatest.Start(t, bramatest.Config{Auth: "bearer", APIKey: []byte(apiKey), NoModelList: true})
	env["BRAMA_AUTH"], env["BRAMA_BASE_URL"], env["BRAMA_API_KEY_FILE"] = "bearer", keyed.URL, keyFile+".wrong"
	require.NoError(t, os.WriteFile(env["BRAMA_API_KEY_FILE"], []byte("sk-wrong\n"), 0o600))
	r = run(t, env, "doctor", "--allow-free-model")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Contains(t, r.stderr, "singularity: brama: HTTP 401")
}
