package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// doctorEnv is a valid environment whose Brama is srv and whose Las is
// the example Las configured by lasConfig.
func doctorEnv(t *testing.T, w world, srv *bramatest.Server, lasConfig string) map[string]string {
	t.Helper()
	entry := filepath.Join(w.dir, "doctor-las.json")
	require.NoError(t, os.WriteFile(entry, []byte(lasConfig), 0o644))
	env := w.env()
	env["BRAMA_BASE_URL"] = srv.URL
	env["LAS_COMMAND"] = testkit.ExampleLas(t)
	env["LAS_MCP_ENTRYPOINT"] = entry
	env["SINGULARITY_MCP_TIMEOUT_SECS"] = "20"
	return env
}

// stateUntouched asserts doctor wrote nothing in the state directory.
func stateUntouched(t *testing.T, env map[string]string) {
	t.Helper()
	_, err := os.Stat(env["SINGULARITY_STATE_DIR"])
	assert.True(t, os.IsNotExist(err), "doctor must write no state")
}

func TestDoctorSucceeds(t *testing.T) {
	w := newWorld(t)
	srv := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), Models: []string{"model-a", "model-b"}})
	cases := []struct{ model string }{{"any"}, {"task:reasoning"}, {"model-b"}}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			env := doctorEnv(t, w, srv, "{}")
			env["BRAMA_MODEL"] = c.model
			r := run(t, env, "doctor")
			require.Equal(t, 0, r.code, r.stderr)
			var report map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
			assert.Equal(t, true, report["ok"])
			assert.Equal(t, c.model, report["brama_model"])
			assert.Nil(t, report["most"])
			assert.Equal(t, float64(17), report["las_tools"])
			assert.NotContains(t, r.stdout+r.stderr, secretValue)
			stateUntouched(t, env)
		})
	}
}

func TestDoctorRefusals(t *testing.T) {
	w := newWorld(t)
	healthy := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), Models: []string{"model-a"}})
	sick := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), HealthStatus: "degraded"})
	most := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok","backends":"none","composition":{}}`))
	}))
	t.Cleanup(most.Close)
	token := filepath.Join(w.dir, "most.token")
	require.NoError(t, os.WriteFile(token, []byte("most-token"), 0o600))

	cases := []struct {
		name   string
		srv    *bramatest.Server
		las    string
		set    map[string]string
		code   int
		stderr string
	}{
		{"brama unhealthy", sick, "{}", nil, 3, `singularity: brama: health status is "degraded", not "ok"`},
		{"model not advertised", healthy, "{}", map[string]string{"BRAMA_MODEL": "model-z"}, 2, "singularity: configuration: configured Brama model is unavailable: model-z; the gateway offers model-a"},
		{"required surface missing", healthy, `{"surfaces":["echo","skarbiec"]}`, nil, 3, "singularity: mcp: required Las surface unavailable: finance"},
		{"most without backend", healthy, "{}", map[string]string{"MOST_BASE_URL": most.URL, "MOST_SERVICE_TOKEN_FILE": token}, 3, "singularity: most: no send-capable backend"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := doctorEnv(t, w, c.srv, c.las)
			for k, v := range c.set {
				env[k] = v
			}
			r := run(t, env, "doctor")
			assert.Equal(t, c.code, r.code, r.stderr)
			assert.Equal(t, c.stderr+"\n", testkit.LastLine(r.stderr))
			assert.Empty(t, r.stdout)
			stateUntouched(t, env)
		})
	}
}

// TestDoctorAgainstOtherGateways: with a bearer key or none, doctor's health
// check is the model list under a /v1 base (the server has no /health), and
// a model the gateway does not list is refused with the reference's
// sentence (exit 2).
func TestDoctorAgainstOtherGateways(t *testing.T) {
	const apiKey = "sk-doctor-key-never-printed"
	w := newWorld(t)
	keyFile := filepath.Join(w.dir, "api.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600))
	for _, auth := range []string{"bearer", "none"} {
		t.Run(auth, func(t *testing.T) {
			cfg := bramatest.Config{Auth: auth, Models: []string{"gpt-small", "gpt-large"}}
			if auth == "bearer" {
				cfg.APIKey = []byte(apiKey)
			}
			srv := bramatest.Start(t, cfg)
			env := doctorEnv(t, w, srv, "{}")
			delete(env, "BRAMA_HMAC_SECRET_FILE")
			env["BRAMA_AUTH"] = auth
			env["BRAMA_MODEL"] = "gpt-large"
			if auth == "bearer" {
				env["BRAMA_API_KEY_FILE"] = keyFile
				env["BRAMA_INPUT_PRICE_USD_PER_MILLION"], env["BRAMA_OUTPUT_PRICE_USD_PER_MILLION"] = "1", "2"
			}
			r := run(t, env, "doctor")
			require.Equal(t, 0, r.code, r.stderr)
			var report map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
			assert.Equal(t, true, report["ok"])
			assert.Equal(t, "gpt-large", report["brama_model"])
			stateUntouched(t, env)
			for _, req := range srv.Requests() {
				assert.Equal(t, "/v1/models", req.Path)
				assert.True(t, req.Verified)
			}

			env["BRAMA_MODEL"] = "gpt-huge"
			r = run(t, env, "doctor")
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Equal(t, "singularity: configuration: configured Brama model is unavailable: gpt-huge; the gateway offers gpt-small, gpt-large\n", testkit.LastLine(r.stderr))
			assert.Empty(t, r.stdout)
			assert.NotContains(t, r.stdout+r.stderr, apiKey)
			stateUntouched(t, env)
		})
	}
	// A wrong key: the gateway's refusal, exit 3, and the key unprinted.
	srv := bramatest.Start(t, bramatest.Config{Auth: "bearer", APIKey: []byte("sk-another-key"), Models: []string{"gpt-small"}})
	env := doctorEnv(t, w, srv, "{}")
	env["BRAMA_AUTH"], env["BRAMA_MODEL"], env["BRAMA_API_KEY_FILE"] = "bearer", "gpt-small", keyFile
	env["SINGULARITY_ALLOW_FREE_MODEL"] = "true"
	r := run(t, env, "doctor")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Equal(t, "singularity: brama: HTTP 401: invalid api key\n", testkit.LastLine(r.stderr))
	assert.NotContains(t, r.stdout+r.stderr, apiKey)
}

// TestDoctorNamesTheModelsOffered: a model the gateway does not list is
// refused with the first 20 models it lists, and how many more.
func TestDoctorNamesTheModelsOffered(t *testing.T) {
	w := newWorld(t)
	var models []string
	for i := range 25 {
		models = append(models, fmt.Sprintf("model-%02d", i))
	}
	srv := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), Models: models})
	env := doctorEnv(t, w, srv, "{}")
	env["BRAMA_MODEL"] = "model-99"
	r := run(t, env, "doctor")
	assert.Equal(t, 2, r.code, r.stderr)
	want := "singularity: configuration: configured Brama model is unavailable: model-99; the gateway offers " + strings.Join(models[:20], ", ") + ", and 5 more\n"
	assert.Equal(t, want, testkit.LastLine(r.stderr))
}

// fakeRegistry is an npm registry that knows no package: npx asks it
// for a misspelled package and fails with npm's own 404.
func fakeRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Not found"}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDoctorReportsEachServer: with a servers file doctor starts each
// server as run does and reports each with its tool count or its
// failure, in JSON and as text. A server that lists tools passes; a
// misspelled npm package (npx against a registry that answers 404), a
// command that exits at once, and a server that lists no tool each make
// doctor exit 3 with "mcp: server <name>: <reason>", the first in file
// order, whose reason holds the server's last stderr line.
func TestDoctorReportsEachServer(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skipf("npx is not installed: %v", err)
	}
	w := newWorld(t)
	srv := bramatest.Start(t, bramatest.Config{Secret: []byte(secretValue), Models: []string{"model-a"}})
	lasConfig := filepath.Join(w.dir, "lab.json")
	require.NoError(t, os.WriteFile(lasConfig, []byte("{}"), 0o600))
	empty := filepath.Join(w.dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"surfaces":["none-such"]}`), 0o600))
	home := t.TempDir()
	lab := map[string]any{"command": testkit.ExampleLas(t), "args": []string{lasConfig}}
	servers := func(entries string) map[string]string {
		path := filepath.Join(t.TempDir(), "servers.json")
		require.NoError(t, os.WriteFile(path, []byte(entries), 0o600))
		env := doctorEnv(t, w, srv, "{}")
		env["LAS_SERVERS_FILE"] = path
		return env
	}
	labJSON, err := json.Marshal(lab)
	require.NoError(t, err)

	good := servers(`{"mcpServers": {"lab": ` + string(labJSON) + `}}`)
	r := run(t, good, "doctor")
	require.Equal(t, 0, r.code, r.stderr)
	var report struct {
		OK       bool `json:"ok"`
		LasTools int  `json:"las_tools"`
		Servers  []struct {
			Name  string `json:"name"`
			Tools int    `json:"tools"`
			Error string `json:"error"`
		} `json:"servers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	assert.True(t, report.OK)
	require.Len(t, report.Servers, 1)
	assert.Equal(t, "lab", report.Servers[0].Name)
	assert.Positive(t, report.Servers[0].Tools)
	assert.Equal(t, report.Servers[0].Tools, report.LasTools)
	text := run(t, good, "doctor", "--format", "text")
	require.Equal(t, 0, text.code, text.stderr)
	assert.Contains(t, text.stdout, "doctor: ok\n")
	assert.Contains(t, text.stdout, fmt.Sprintf("server lab: %d tools\n", report.Servers[0].Tools))

	bad := servers(`{"mcpServers": {
	  "lab": ` + string(labJSON) + `,
	  "typo": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memoryy@1.0.0"],
	           "env": {"npm_config_registry": "` + fakeRegistry(t) + `", "HOME": "` + home + `"}},
	  "gone": {"command": "false"},
	  "mute": {"command": "` + testkit.ExampleLas(t) + `", "args": ["` + empty + `"]}
	}}`)
	r = run(t, bad, "doctor")
	assert.Equal(t, 3, r.code, r.stderr)
	last := testkit.LastLine(r.stderr)
	assert.True(t, strings.HasPrefix(last, "singularity: mcp: server typo: "), last)
	assert.Contains(t, last, "npm error 404 Not Found - GET", last)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report), r.stdout)
	assert.False(t, report.OK)
	require.Len(t, report.Servers, 4)
	byName := map[string]string{}
	for _, s := range report.Servers {
		byName[s.Name] = s.Error
	}
	assert.Empty(t, byName["lab"])
	assert.Contains(t, byName["typo"], "npm error 404")
	assert.NotEmpty(t, byName["gone"])
	assert.Equal(t, "lists no tool", byName["mute"])
	text = run(t, bad, "doctor", "--format", "text")
	assert.Equal(t, 3, text.code)
	assert.Contains(t, text.stdout, "doctor: failed\n")
	assert.Contains(t, text.stdout, "server mute: failed: lists no tool\n")
	stateUntouched(t, bad)
}
