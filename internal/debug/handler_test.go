package debug

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug/describe"
	"github.com/wisent/singularity/test/debugtest"
)

func newTestServer(t testing.TB, spec debugtest.Spec, deadline time.Duration) *httptest.Server {
	t.Helper()
	system, pid := spawnTree(t, spec)
	srv := httptest.NewServer(Handler(HandlerConfig{Root: system.Root, PID: pid, Deadline: deadline}))
	t.Cleanup(srv.Close)
	return srv
}

// do sends one request bounded by the test deadline and returns the
// response with its body read.
func do(t testing.TB, method, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestHandlerRoutes(t *testing.T) {
	srv := newTestServer(t, debugtest.Family(), testWait)
	tests := []struct {
		name, method, path string
		code               int
		contentType        string
		body               string // exact, when not empty
		contains           []string
	}{
		{"json tree", "GET", "/debug/actors", 200, "application/json", compact(t, familyJSON) + "\n", nil},
		{"explicit json", "GET", "/debug/actors?format=json", 200, "application/json", compact(t, familyJSON) + "\n", nil},
		{"text tree", "GET", "/debug/actors?format=text", 200, "text/plain; charset=utf-8", familyText, nil},
		{"unknown format", "GET", "/debug/actors?format=xml", 400, "text/plain; charset=utf-8", "format must be json or text\n", nil},
		{"page", "GET", "/debug/", 200, "text/html; charset=utf-8", "", []string{"<script>", `fetch(location.href`, "setTimeout(load, REFRESH_MS)"}},
		{"healthz", "GET", "/healthz", 200, "text/plain; charset=utf-8", "ok", nil},
		{"head healthz", "HEAD", "/healthz", 200, "text/plain; charset=utf-8", "", nil},
		{"post actors", "POST", "/debug/actors", 405, "", "", nil},
		{"post healthz", "POST", "/healthz", 405, "", "", nil},
		{"put page", "PUT", "/debug/", 405, "", "", nil},
		{"delete actors", "DELETE", "/debug/actors", 405, "", "", nil},
		{"unknown path", "GET", "/debug/nope", 404, "", "", nil},
		{"root", "GET", "/", 404, "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, srv.URL+tt.path)
			assert.Equal(t, tt.code, resp.StatusCode)
			assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			if tt.code == 405 {
				assert.Contains(t, resp.Header.Get("Allow"), "GET")
				assert.NotContains(t, resp.Header.Get("Allow"), tt.method)
			}
			if tt.contentType != "" {
				assert.Equal(t, tt.contentType, resp.Header.Get("Content-Type"))
			}
			if tt.body != "" {
				assert.Equal(t, tt.body, body)
			}
			for _, c := range tt.contains {
				assert.Contains(t, body, c)
			}
		})
	}
}

func TestHandlerPageIsSelfContained(t *testing.T) {
	srv := newTestServer(t, debugtest.Family(), testWait)
	resp, body := do(t, "GET", srv.URL+"/debug/")
	require.Equal(t, 200, resp.StatusCode)
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "connect-src 'self'")
	assert.Contains(t, csp, "script-src 'sha256-")
	assert.NotContains(t, csp, "unsafe-inline")
	for _, external := range []string{"http://", "https://", "src=", "<link", "@import"} {
		assert.NotContains(t, body, external, "no external assets")
	}
	assert.NotContains(t, body, "innerHTML", "the script never writes markup itself")
}

func TestHandlerUnresponsiveWithinDeadline(t *testing.T) {
	spec := debugtest.Family()
	spec.Children = append(spec.Children, debugtest.Spec{ID: "stuck", Silent: true,
		Description: describe.Description{Kind: "las"}})
	const deadline = 300 * time.Millisecond
	srv := newTestServer(t, spec, deadline)

	// do bounds the request by the test deadline: a hanging endpoint
	// fails here instead of passing late.
	start := time.Now()
	resp, body := do(t, "GET", srv.URL+"/debug/actors?format=text")
	require.Equal(t, 200, resp.StatusCode)
	assert.Less(t, time.Since(start), deadline+2*time.Second)
	assert.True(t, strings.HasPrefix(body, "family \"family\" running\n"), body)
	assert.Contains(t, body, "\n  ? \"\" unresponsive pid=family/stuck\n")
	assert.Contains(t, body, "\n    being \"Bo\" running ")
}
