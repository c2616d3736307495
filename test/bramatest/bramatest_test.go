package bramatest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var secret = []byte("server-side-secret")

// post sends a completion request signed by hand with key.
func post(t *testing.T, s *Server, key []byte, agent string, ts int64, body string, tweak func(*http.Request)) (int, string) {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	digest := hex.EncodeToString(sum[:])
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(agent + ":" + strconv.FormatInt(ts, 10) + ":" + digest))
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agent-Id", agent)
	req.Header.Set("X-Agent-Timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("X-Agent-Body-Sha256", digest)
	req.Header.Set("X-Agent-Signature", hex.EncodeToString(mac.Sum(nil)))
	if tweak != nil {
		tweak(req)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0.2}`

func TestVerifiesSignature(t *testing.T) {
	const refused = `{"error":{"message":"invalid signature"}}` + "\n"
	tests := []struct {
		name   string
		key    []byte
		tweak  func(*http.Request)
		status int
	}{
		{"valid", secret, nil, 200},
		{"wrong key", []byte("other"), nil, 401},
		{"body hash header wrong", secret, func(r *http.Request) { r.Header.Set("X-Agent-Body-Sha256", hex.EncodeToString(make([]byte, 32))) }, 401},
		{"body changed", secret, func(r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader([]byte(body[:len(body)-1] + " }")))
			r.ContentLength++
		}, 401},
		{"agent id changed", secret, func(r *http.Request) { r.Header.Set("X-Agent-Id", "someone-else") }, 401},
		{"signature missing", secret, func(r *http.Request) { r.Header.Del("X-Agent-Signature") }, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Config{Secret: secret})
			s.Enqueue(TextReply("hello", Usage(1, 2)))
			status, got := post(t, s, tt.key, "agent-1", time.Now().Unix(), body, tt.tweak)
			require.Equal(t, tt.status, status, got)
			reqs := s.Requests()
			require.Len(t, reqs, 1)
			require.Equal(t, tt.status == 200, reqs[0].Verified)
			if tt.status == 401 {
				require.Equal(t, refused, got)
				require.Empty(t, s.Completions())
				return
			}
			require.JSONEq(t, `{"id":"chatcmpl-test","object":"chat.completion","model":"test-model",
				"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`, got)
			c := s.Completions()
			require.Len(t, c, 1)
			require.Equal(t, "m", c[0].Completion.Model)
			require.Equal(t, "0.2", c[0].Completion.Temperature.String())
			require.Equal(t, "agent-1", c[0].Header.Get("X-Agent-Id"))
		})
	}
}

func TestStaleTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := Start(t, Config{Secret: secret, MaxSkew: time.Minute, Now: func() time.Time { return now }})
	s.SetHandler(func(*Request) Reply { return TextReply("ok", Usage(1, 1)) })
	status, _ := post(t, s, secret, "a", now.Unix()-30, body, nil)
	require.Equal(t, 200, status)
	status, got := post(t, s, secret, "a", now.Unix()-61, body, nil)
	require.Equal(t, 401, status)
	require.JSONEq(t, `{"error":{"message":"stale timestamp"}}`, got)
}

func TestScriptOrder(t *testing.T) {
	s := Start(t, Config{Secret: secret})
	s.Enqueue(TextReply("first", Usage(1, 1)), ErrorReply(429, "slow"))
	status, got := post(t, s, secret, "a", time.Now().Unix(), body, nil)
	require.Equal(t, 200, status)
	require.Contains(t, got, `"first"`)
	status, got = post(t, s, secret, "a", time.Now().Unix(), body, nil)
	require.Equal(t, 429, status)
	require.JSONEq(t, `{"error":{"message":"slow"}}`, got)
	status, got = post(t, s, secret, "a", time.Now().Unix(), body, nil)
	require.Equal(t, 500, status, "queue empty and no handler")
	require.JSONEq(t, `{"error":{"message":"bramatest: no scripted reply"}}`, got)

	s.SetHandler(func(r *Request) Reply {
		return ToolCallsReply(Usage(2, 3), Call("c1", "echo", Arguments(map[string]string{"model": r.Completion.Model})))
	})
	status, got = post(t, s, secret, "a", time.Now().Unix(), body, nil)
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"id":"chatcmpl-test","object":"chat.completion","model":"test-model",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,
		"tool_calls":[{"id":"c1","type":"function","function":{"name":"echo","arguments":"{\"model\":\"m\"}"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}`, got)
	require.Len(t, s.Completions(), 4)
}

func TestReadOnlyEndpointsAndPrefix(t *testing.T) {
	s := Start(t, Config{Secret: secret, Prefix: "/p/", Models: []string{"a", "b"}})
	get := func(path string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
		require.NoError(t, err)
		return do(t, req)
	}
	status, got := get("/health")
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"status":"ok"}`, got)
	status, got = get("/v1/models")
	require.Equal(t, 200, status)
	require.JSONEq(t, `{"object":"list","data":[{"id":"a","object":"model"},{"id":"b","object":"model"}]}`, got)
	s.SetModels("c")
	_, got = get("/v1/models")
	require.JSONEq(t, `{"object":"list","data":[{"id":"c","object":"model"}]}`, got)
	status, _ = get("/nothing")
	require.Equal(t, 404, status)

	req, err := http.NewRequest(http.MethodGet, s.URL[:len(s.URL)-len("/p")]+"/health", nil)
	require.NoError(t, err)
	status, _ = do(t, req)
	require.Equal(t, 404, status, "routes live under the prefix only")
}

func TestContentTypeRequired(t *testing.T) {
	s := Start(t, Config{Secret: secret})
	status, got := post(t, s, secret, "a", time.Now().Unix(), body, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") })
	require.Equal(t, 400, status)
	require.JSONEq(t, `{"error":{"message":"content-type must be application/json"}}`, got)
}

// TestOpenAICompatibleMode: with bearer the server checks the key on every
// route, serves only /v1/models and /v1/chat/completions under its /v1 base
// and has no /health; with none it refuses any Authorization header.
func TestOpenAICompatibleMode(t *testing.T) {
	s := Start(t, Config{Auth: "bearer", APIKey: []byte("sk-k"), Models: []string{"m"}})
	require.True(t, len(s.URL) > 3 && s.URL[len(s.URL)-3:] == "/v1", s.URL)
	root := s.URL[:len(s.URL)-3]
	s.Enqueue(Reply{Status: 429, Header: http.Header{"Retry-After": []string{"1"}}, JSON: map[string]any{}}, TextReply("ok", Usage(1, 1)))
	request := func(method, url, auth, body string) *http.Response {
		req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	tests := []struct {
		method, url, auth string
		status            int
	}{
		{http.MethodGet, s.URL + "/models", "Bearer sk-k", 200},
		{http.MethodGet, s.URL + "/models", "", 401},
		{http.MethodGet, s.URL + "/models", "Bearer sk-x", 401},
		{http.MethodGet, s.URL + "/models", "sk-k", 401},
		{http.MethodGet, root + "/health", "Bearer sk-k", 404},
		{http.MethodGet, s.URL + "/health", "Bearer sk-k", 404},
		{http.MethodGet, root + "/models", "Bearer sk-k", 404},
		{http.MethodPost, s.URL + "/chat/completions", "", 401},
		{http.MethodPost, s.URL + "/chat/completions", "Bearer sk-k", 429},
		{http.MethodPost, s.URL + "/chat/completions", "Bearer sk-k", 200},
	}
	for _, tt := range tests {
		resp := request(tt.method, tt.url, tt.auth, body)
		require.Equal(t, tt.status, resp.StatusCode, "%s %s %q", tt.method, tt.url, tt.auth)
		if tt.status == 429 {
			require.Equal(t, "1", resp.Header.Get("Retry-After"))
		}
	}
	require.Len(t, s.Completions(), 2, "the two completions that passed the key check")

	none := Start(t, Config{Auth: "none"})
	require.Equal(t, 400, request(http.MethodGet, none.URL+"/models", "Bearer anything", "").StatusCode)
	require.Equal(t, 200, request(http.MethodGet, none.URL+"/models", "", "").StatusCode)
}

// TestSkimRequests: a skimming server answers a well-shaped completion
// request and refuses with 400 a body without a completion's shape.
func TestSkimRequests(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"well shaped", body, 200},
		{"tool messages", `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"tool","tool_call_id":"a","content":"{}"}]}`, 200},
		{"keys in another order", `{"temperature":0.2,"tools":[{"type":"function","function":{"name":"content"}}],"messages":[{"name":"x","content":"first \u003c","role":"user"},{"content":"second","role":"assistant"}],"model":"m"}`, 200},
		{"first message without content", `{"model":"m","messages":[{"role":"assistant","tool_calls":[]},{"role":"user","content":"late"}]}`, 200},
		{"not JSON", `{"model":"m","messages":[`, 400},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"no messages", `{"model":"m","messages":[]}`, 400},
		{"message without role", `{"model":"m","messages":[{"content":"hi"}]}`, 400},
		{"message not an object", `{"model":"m","messages":["hi"]}`, 400},
		{"messages not an array", `{"model":"m","messages":{"role":"user"}}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Start(t, Config{Secret: secret, SkimRequests: true})
			var skimmed *Skim
			s.SetHandler(func(r *Request) Reply {
				assert.Nil(t, r.Completion, "a skimming server decodes no messages")
				skimmed = r.Skim
				return TextReply("ok", Usage(1, 1))
			})
			status, got := post(t, s, secret, "agent-1", time.Now().Unix(), tt.body, nil)
			require.Equal(t, tt.status, status, got)
			if tt.status == 200 {
				var cb CompletionBody
				require.NoError(t, json.Unmarshal([]byte(tt.body), &cb))
				last := cb.Messages[len(cb.Messages)-1]
				require.Equal(t, &Skim{Messages: len(cb.Messages), LastRole: last.Role, First: cb.Messages[0].Content}, skimmed)
			}
			if tt.status == 400 {
				require.JSONEq(t, `{"error":{"message":"body is not a completion request"}}`, got)
			}
		})
	}
}
