package simbrama

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wisent/singularity/internal/tools/builtin"
	"github.com/wisent/singularity/internal/wire/chat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	testSecret = []byte("demo-secret-not-real")
	testNow    = time.Unix(1_700_000_000, 0)
)

// startServer starts a simulated Brama on a fixed clock and a client
// whose connections are closed with it.
func startServer(t *testing.T) (*Server, *http.Client) {
	t.Helper()
	opts := demoOpts
	opts.Now = func() time.Time { return testNow }
	s, err := Start(testSecret, opts)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		require.NoError(t, s.Close())
	})
	return s, client
}

// signed is a completion request with its signature inputs, which tests
// alter to break one thing at a time.
type signed struct {
	secret  []byte
	agentID string
	unix    int64
	body    []byte // what is sent
	hashed  []byte // what the digest and signature cover
}

func newSigned(body []byte) signed {
	return signed{secret: testSecret, agentID: "agent-ada", unix: testNow.Unix(), body: body, hashed: body}
}

func (r signed) send(t *testing.T, s *Server, c *http.Client) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions", bytes.NewReader(r.body))
	require.NoError(t, err)
	sum := sha256.Sum256(r.hashed)
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-agent-id", r.agentID)
	req.Header.Set("x-agent-timestamp", strconv.FormatInt(r.unix, 10))
	req.Header.Set("x-agent-body-sha256", hex.EncodeToString(sum[:]))
	req.Header.Set("x-agent-signature", hex.EncodeToString(Sign(r.secret, r.agentID, r.unix, r.hashed)))
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestStartRefusesEmptySecret(t *testing.T) {
	_, err := Start(nil, Options{})
	require.EqualError(t, err, "simbrama: empty secret")
}

func TestHealthAndModels(t *testing.T) {
	s, c := startServer(t)
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"), s.URL())
	code, body := get(t, c, s.URL()+"/health")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, string(body))
	code, body = get(t, c, s.URL()+"/v1/models")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"object":"list","data":[{"id":"sim-small","object":"model","owned_by":"simulation"},`+
		`{"id":"sim-large","object":"model","owned_by":"simulation"}]}`, string(body))
}

func TestCompletionAuthentication(t *testing.T) {
	body := mustJSON(t, being("Ada", catalogue(), framing(1)))
	tests := []struct {
		name     string
		alter    func(*signed)
		wantCode int
		wantMsg  string
	}{
		{"valid", func(*signed) {}, http.StatusOK, ""},
		{"skew of exactly 300 s is accepted", func(r *signed) { r.unix -= 300 }, http.StatusOK, ""},
		{"wrong secret", func(r *signed) { r.secret = []byte("other") }, http.StatusUnauthorized, "invalid signature"},
		{"body changed after signing", func(r *signed) { r.body = append(bytes.Clone(r.body), ' ') }, http.StatusUnauthorized, "body hash mismatch"},
		{"stale timestamp", func(r *signed) { r.unix -= 301 }, http.StatusUnauthorized, "timestamp outside the allowed window"},
		{"future timestamp", func(r *signed) { r.unix += 301 }, http.StatusUnauthorized, "timestamp outside the allowed window"},
		{"missing agent id", func(r *signed) { r.agentID = "" }, http.StatusUnauthorized, "missing signature headers"},
		{"not JSON", func(r *signed) { r.body = []byte("{"); r.hashed = r.body }, http.StatusBadRequest, "invalid request body: unexpected end of JSON input"},
		{"unknown model", func(r *signed) {
			r.body = mustJSON(t, completionRequest{Model: "gpt-x"})
			r.hashed = r.body
		}, http.StatusBadRequest, "unknown model: gpt-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := startServer(t)
			r := newSigned(body)
			tt.alter(&r)
			code, got := r.send(t, s, c)
			require.Equal(t, tt.wantCode, code, string(got))
			if tt.wantMsg != "" {
				assert.JSONEq(t, `{"error":{"message":`+string(mustJSON(t, tt.wantMsg))+`}}`, string(got))
				assert.Equal(t, Stats{Rejected: 1, ByBeing: map[string]uint64{}}, s.Stats())
			}
		})
	}
}

func TestSignatureMismatchWithOwnHeaders(t *testing.T) {
	s, c := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader("{}"))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("{}"))
	req.Header.Set("x-agent-id", "a")
	req.Header.Set("x-agent-timestamp", strconv.FormatInt(testNow.Unix(), 10))
	req.Header.Set("x-agent-body-sha256", hex.EncodeToString(sum[:]))
	req.Header.Set("x-agent-signature", "not-hex")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	code, _ := get(t, c, s.URL()+"/v1/chat/completions")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
}

// wireCompletion is a completion as the runtime's client reads it.
type wireCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role      string          `json:"role"`
			Content   *string         `json:"content"`
			ToolCalls []chat.ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage chat.Usage `json:"usage"`
}

// checkShape applies the client's validation
// (docs/brama.md#response-validation).
func checkShape(t *testing.T, raw []byte) wireCompletion {
	t.Helper()
	var w wireCompletion
	require.NoError(t, json.Unmarshal(raw, &w))
	require.Len(t, w.Choices, 1)
	ch := w.Choices[0]
	assert.Equal(t, chat.RoleAssistant, ch.Message.Role)
	switch ch.FinishReason {
	case "stop":
		assert.Empty(t, ch.Message.ToolCalls)
		require.NotNil(t, ch.Message.Content)
		assert.True(t, strings.HasPrefix(*ch.Message.Content, Label))
	case "tool_calls":
		assert.NotEmpty(t, ch.Message.ToolCalls)
		assert.Nil(t, ch.Message.Content)
	default:
		t.Fatalf("finish reason %q", ch.FinishReason)
	}
	assert.NotZero(t, w.Usage.TotalTokens)
	assert.Equal(t, w.Usage.PromptTokens+w.Usage.CompletionTokens, w.Usage.TotalTokens)
	return w
}

// TestCycleLoop drives three beings through their first two cycles over
// HTTP as the being actor would, feeding back fake tool results.
func TestCycleLoop(t *testing.T) {
	s, c := startServer(t)
	tools := catalogue()
	in := map[string]bool{}
	for _, tool := range tools {
		in[tool.Function.Name] = true
	}
	const maxRounds = 8
	var spawned []string
	for _, name := range []string{"Ada", "Bo", "Cy"} {
		msgs := []chat.Message{systemFor(name)}
		for cycle := 1; cycle <= 2; cycle++ {
			msgs = append(msgs, framing(cycle))
			var actions []string
			final := ""
			for round := 1; final == "" && round <= maxRounds; round++ {
				code, raw := newSigned(mustJSON(t, completionRequest{Model: "any", Messages: msgs, Tools: tools})).send(t, s, c)
				require.Equal(t, http.StatusOK, code, string(raw))
				w := checkShape(t, raw)
				assert.Equal(t, "any", w.Model)
				msg := w.Choices[0].Message
				if len(msg.ToolCalls) == 0 {
					final = *msg.Content
					msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, Content: final})
					break
				}
				msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: msg.ToolCalls})
				for _, call := range msg.ToolCalls {
					require.True(t, in[call.Function.Name], call.Function.Name)
					actions = append(actions, call.Function.Name)
					if call.Function.Name == builtin.SpawnChild {
						var a map[string]string
						require.NoError(t, json.Unmarshal([]byte(call.Function.Arguments), &a))
						spawned = append(spawned, name+">"+a["name"])
					}
					msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: call.ID, Name: call.Function.Name,
						Content: `{"status":"success","content":{"revenue_usd":"1.00"},"error_code":null,"chat_id":null,"message_id":null}`})
				}
			}
			require.NotEmpty(t, final, "%s cycle %d: no plain reply within %d rounds", name, cycle, maxRounds)
			assert.Contains(t, final, "Cycle "+strconv.Itoa(cycle)+" complete: "+name)
			if cycle == 1 {
				assert.Contains(t, actions, builtin.MemoryRemember)
				assert.Contains(t, actions, builtin.SelfAddRule)
				assert.Contains(t, actions, "finance__finance_sell")
				assert.Contains(t, actions, builtin.FileWrite)
			}
		}
	}
	assert.Equal(t, []string{"Ada>Bo", "Ada>Cy", "Bo>Di"}, spawned)
	st := s.Stats()
	assert.Equal(t, st.ByBeing["Ada"]+st.ByBeing["Bo"]+st.ByBeing["Cy"], st.Completions)
	// Cycle 1: 4 tool rounds and a reply; cycle 2: 3 and a reply.
	assert.Equal(t, uint64(5+4), st.ByBeing["Ada"])
	assert.Zero(t, st.Rejected)
	assert.NotZero(t, st.Tokens)
}

func TestSameRequestSameBytes(t *testing.T) {
	s, c := startServer(t)
	body := mustJSON(t, being("Ada", catalogue(), concat([]chat.Message{framing(1)}, doneRounds(1))...))
	first := newSigned(body)
	code1, raw1 := first.send(t, s, c)
	second := newSigned(body)
	second.unix -= 10 // a different signature over the same body
	second.agentID = "agent-other"
	code2, raw2 := second.send(t, s, c)
	require.Equal(t, http.StatusOK, code1)
	require.Equal(t, http.StatusOK, code2)
	assert.Equal(t, string(raw1), string(raw2))

	// A fresh server (a restart) answers the same.
	s2, c2 := startServer(t)
	_, raw3 := newSigned(body).send(t, s2, c2)
	assert.Equal(t, string(raw1), string(raw3))
}

func TestCloseIsIdempotent(t *testing.T) {
	s, err := Start(testSecret, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = http.Get(s.URL() + "/health")
	assert.Error(t, err)
}

func BenchmarkCompletionHTTP(b *testing.B) {
	s, err := Start(testSecret, Options{RootName: "Ada"})
	require.NoError(b, err)
	defer func() { require.NoError(b, s.Close()) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	body := mustJSON(b, being("Ada", catalogue(), concat([]chat.Message{framing(1)}, doneRounds(2))...))
	sum := sha256.Sum256(body)
	b.ReportAllocs()
	for b.Loop() {
		unix := time.Now().Unix()
		req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("x-agent-id", "a")
		req.Header.Set("x-agent-timestamp", strconv.FormatInt(unix, 10))
		req.Header.Set("x-agent-body-sha256", hex.EncodeToString(sum[:]))
		req.Header.Set("x-agent-signature", hex.EncodeToString(Sign(testSecret, "a", unix, body)))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
}
