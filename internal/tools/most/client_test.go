package most

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/supervision/fault"
)

const (
	testToken = "most-test-token-5f2a"
	chatUUID  = "7d0c1c7e-6a55-4bd1-9d4f-3f1f0b2a9c10"
)

// fakeMost plays Most behind a real HTTP server: it checks the bearer
// token, records each request and answers per route, or with status and
// body when status is set.
type fakeMost struct {
	mu     sync.Mutex
	seen   []recorded
	status int
	body   string
}

type recorded struct {
	Method, Path, Body string
}

func (f *fakeMost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("Authorization") != "Bearer "+testToken {
		http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	f.mu.Lock()
	f.seen = append(f.seen, recorded{r.Method, r.URL.Path, string(body)})
	status, answer := f.status, f.body
	f.mu.Unlock()
	if status == 0 {
		status = http.StatusOK
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/healthz":
			answer = `{"status":"ok","backends":["imessage"],"composition":{"imessage":1},"extra":"dropped"}`
		case r.Method == http.MethodPost && r.URL.Path == "/v3/chats":
			answer = `{"id":"` + chatUUID + `","message":{"id":"msg-1","status":"queued"}}`
		case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v3/chats/"):
			answer = `{"id":"msg-2","status":"queued"}`
		default:
			status, answer = http.StatusNotFound, `{"error":"no route"}`
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (f *fakeMost) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.seen...)
}

func serve(t *testing.T, token string) (*fakeMost, *Client) {
	t.Helper()
	f := &fakeMost{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var secret identity.Secret
	if token != "" {
		secret = identity.NewSecret([]byte(token))
	}
	return f, New(srv.URL+"/", secret, srv.Client())
}

func TestCreateChat(t *testing.T) {
	f, c := serve(t, testToken)
	o, err := c.Call(context.Background(), CreateChat, json.RawMessage(
		`{"from":" +15550001 ","to":["+15550002","ada@example.com"],"text":"Hello\nthere","preferred_service":"SMS"}`))
	require.NoError(t, err)
	require.Equal(t, outcome.Success, o.Status)
	require.Equal(t, chatUUID, o.ChatID)
	require.Equal(t, "msg-1", o.MessageID)
	require.JSONEq(t, `{"id":"`+chatUUID+`","message":{"id":"msg-1","status":"queued"}}`, string(o.Content))
	require.Equal(t, []recorded{{http.MethodPost, "/v3/chats",
		`{"from":"+15550001","to":["+15550002","ada@example.com"],"message":{"parts":[{"type":"text","value":"Hello\nthere"}],"preferred_service":"SMS"}}`}},
		f.requests())

	// Without preferred_service the key is absent.
	_, err = c.Call(context.Background(), CreateChat, json.RawMessage(`{"from":"a","to":["b"],"text":"hi"}`))
	require.NoError(t, err)
	require.Equal(t, `{"from":"a","to":["b"],"message":{"parts":[{"type":"text","value":"hi"}]}}`, f.requests()[1].Body)
}

func TestSendMessage(t *testing.T) {
	f, c := serve(t, testToken)
	o, err := c.Call(context.Background(), SendMessage, json.RawMessage(`{"chat_id":"`+chatUUID+`","text":"again","preferred_service":"iMessage"}`))
	require.NoError(t, err)
	require.Equal(t, outcome.Success, o.Status)
	require.Empty(t, o.ChatID)
	require.Equal(t, "msg-2", o.MessageID)
	require.Equal(t, []recorded{{http.MethodPost, "/v3/chats/" + chatUUID + "/messages",
		`{"message":{"parts":[{"type":"text","value":"again"}],"preferred_service":"iMessage"}}`}}, f.requests())
}

func TestHealthTool(t *testing.T) {
	_, c := serve(t, testToken)
	o, err := c.Call(context.Background(), Health, json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Equal(t, outcome.Success, o.Status)
	require.Equal(t, `{"status":"ok","backends":["imessage"],"composition":{"imessage":1}}`, string(o.Content))
}

func TestArguments(t *testing.T) {
	tests := []struct {
		tool, args, key string
	}{
		{Health, `[]`, ""},
		{Health, `{"x":1}`, "x"},
		{CreateChat, `"x"`, ""},
		{CreateChat, `{"to":["b"],"text":"t"}`, "from"},
		{CreateChat, `{"from":"  ","to":["b"],"text":"t"}`, "from"},
		{CreateChat, `{"from":"a\u0007","to":["b"],"text":"t"}`, "from"},
		{CreateChat, `{"from":"a","text":"t"}`, "to"},
		{CreateChat, `{"from":"a","to":[],"text":"t"}`, "to"},
		{CreateChat, `{"from":"a","to":"b","text":"t"}`, "to"},
		{CreateChat, `{"from":"a","to":["b",""],"text":"t"}`, "to"},
		{CreateChat, `{"from":"a","to":[1],"text":"t"}`, "to"},
		{CreateChat, `{"from":"a","to":["b"]}`, "text"},
		{CreateChat, `{"from":"a","to":["b"],"text":"x\u0000y"}`, "text"},
		{CreateChat, `{"from":"a","to":["b"],"text":"` + strings.Repeat("x", MaxTextBytes+1) + `"}`, "text"},
		{CreateChat, `{"from":"a","to":["b"],"text":"t","preferred_service":"sms"}`, "preferred_service"},
		{CreateChat, `{"from":"a","to":["b"],"text":"t","preferred_service":1}`, "preferred_service"},
		{CreateChat, `{"from":"a","to":["b"],"text":"t","chat_id":"x"}`, "chat_id"},
		{SendMessage, `{"text":"t"}`, "chat_id"},
		{SendMessage, `{"chat_id":"not-a-uuid","text":"t"}`, "chat_id"},
		{SendMessage, `{"chat_id":"{` + chatUUID + `}","text":"t"}`, "chat_id"},
		{SendMessage, `{"chat_id":"../../admin","text":"t"}`, "chat_id"},
		{SendMessage, `{"chat_id":"` + chatUUID + `","text":" "}`, "text"},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.key, func(t *testing.T) {
			f, c := serve(t, testToken)
			o, err := c.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			require.NoError(t, err)
			require.Equal(t, outcome.Failed, o.Status)
			require.Equal(t, CodeInvalidArguments, o.ErrorCode)
			want := `{"message":"arguments must be a JSON object"}`
			if tc.key != "" {
				want = `{"message":"` + tc.key + ` is invalid"}`
			}
			require.JSONEq(t, want, string(o.Content))
			require.Empty(t, f.requests(), "nothing reaches Most")
		})
	}
}

func TestNoToken(t *testing.T) {
	f, c := serve(t, "")
	for _, name := range Names() {
		o, err := c.Call(context.Background(), name, json.RawMessage(`{}`))
		require.NoError(t, err)
		require.Equal(t, outcome.Failed, o.Status)
		require.Equal(t, CodeUnavailable, o.ErrorCode)
		require.JSONEq(t, `{"message":"Most credential is not configured"}`, string(o.Content))
	}
	require.Empty(t, f.requests())
	_, err := c.CheckHealth(context.Background())
	require.EqualError(t, err, "most: Most credential is not configured")
}

func TestWrongTokenIsPermanent(t *testing.T) {
	_, c := serve(t, "wrong-token")
	o, err := c.Call(context.Background(), Health, json.RawMessage(`{}`))
	require.Equal(t, outcome.Indeterminate, o.Status)
	require.Equal(t, CodeRemote, o.ErrorCode)
	require.Equal(t, fault.Permanent, fault.KindOf(err))
	require.NotContains(t, err.Error(), "wrong-token")
	require.NotContains(t, string(o.Content), "wrong-token")
}

func TestUpstreamFailures(t *testing.T) {
	tests := []struct {
		status int
		body   string
		kind   fault.Kind
		shown  string
	}{
		{503, `{"error":"backend down"}`, fault.Indeterminate, `Most answered HTTP 503: {"error":"backend down"} (indeterminate)`},
		{500, "boom", fault.Transient, "Most answered HTTP 500: boom (transient)"},
		{502, "", fault.Transient, "Most answered HTTP 502: empty answer (transient)"},
		{429, "slow down", fault.Transient, "Most answered HTTP 429: slow down (transient)"},
		{404, `{"error":"chat not found"}`, fault.Permanent, `Most answered HTTP 404: {"error":"chat not found"} (permanent)`},
		{422, strings.Repeat("é", 400), fault.Permanent, "Most answered HTTP 422: " + strings.Repeat("é", 150) + " (permanent)"},
		{200, "not json", fault.Indeterminate, "Most answer is not JSON (indeterminate)"},
	}
	for _, tc := range tests {
		t.Run(tc.shown, func(t *testing.T) {
			f, c := serve(t, testToken)
			f.status, f.body = tc.status, tc.body
			o, err := c.Call(context.Background(), SendMessage, json.RawMessage(`{"chat_id":"`+chatUUID+`","text":"t"}`))
			require.Error(t, err)
			require.Equal(t, fault.ClassMost, fault.ClassOf(err))
			require.Equal(t, tc.kind, fault.KindOf(err))
			require.Equal(t, outcome.Indeterminate, o.Status)
			require.Equal(t, CodeRemote, o.ErrorCode)
			var msg struct{ Message string }
			require.NoError(t, json.Unmarshal(o.Content, &msg))
			require.Equal(t, tc.shown, msg.Message)
			require.Empty(t, o.MessageID)
		})
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	c := New("http://"+addr, identity.NewSecret([]byte(testToken)), nil)
	o, err := c.Call(context.Background(), Health, json.RawMessage(`{}`))
	require.Equal(t, fault.Transient, fault.KindOf(err))
	require.JSONEq(t, `{"message":"Most could not be reached (transient)"}`, string(o.Content))
	require.Equal(t, outcome.Indeterminate, o.Status)
}

func TestConnectionDropAfterSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, identity.NewSecret([]byte(testToken)), srv.Client())
	o, err := c.Call(context.Background(), CreateChat, json.RawMessage(`{"from":"a","to":["b"],"text":"t"}`))
	require.Equal(t, fault.Indeterminate, fault.KindOf(err))
	require.JSONEq(t, `{"message":"Most connection failed after the request was sent (indeterminate)"}`, string(o.Content))
}

func TestCheckHealth(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"status":"ok","backends":["imessage","sms"]}`, true},
		{`{"status":"ok","backends":"sms"}`, true},
		{`{"status":"ok","backends":"none"}`, false},
		{`{"status":"ok","backends":["none"]}`, false},
		{`{"status":"ok","backends":[]}`, false},
		{`{"status":"ok","backends":""}`, false},
		{`{"status":"ok"}`, false},
		{`[]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			f, c := serve(t, testToken)
			f.status, f.body = http.StatusOK, tc.body
			_, err := c.CheckHealth(context.Background())
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, fault.ClassMost, fault.ClassOf(err))
		})
	}
	f, c := serve(t, testToken)
	f.status, f.body = http.StatusOK, `{"status":"ok","backends":"none"}`
	_, err := c.CheckHealth(context.Background())
	require.EqualError(t, err, "most: no send-capable backend")
	f.status, f.body = http.StatusInternalServerError, "down"
	_, err = c.CheckHealth(context.Background())
	require.EqualError(t, err, "most: GET /healthz: HTTP 500: down")
}

func TestRecordCreated(t *testing.T) {
	var res state.CreatedResources
	RecordCreated(&res, outcome.Outcome{ChatID: "c1", MessageID: "m1"})
	RecordCreated(&res, outcome.Outcome{ChatID: "c1", MessageID: "m2"})
	RecordCreated(&res, outcome.Outcome{MessageID: "m1"})
	RecordCreated(&res, outcome.Outcome{})
	require.Equal(t, []string{"c1"}, res.ChatIDs)
	require.Equal(t, []string{"m1", "m2"}, res.MessageIDs)
}

func TestUnknownName(t *testing.T) {
	_, c := serve(t, testToken)
	o, err := c.Call(context.Background(), "most_delete", json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Equal(t, "unknown_tool", o.ErrorCode)
}

func BenchmarkSendMessage(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"id":"msg-2"}`)
	}))
	defer srv.Close()
	c := New(srv.URL, identity.NewSecret([]byte(testToken)), srv.Client())
	args := json.RawMessage(`{"chat_id":"` + chatUUID + `","text":"hello"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if o, err := c.Call(ctx, SendMessage, args); err != nil || o.Status != outcome.Success {
			b.Fatal(err)
		}
	}
}

// TestUnauthorizedBodyEchoingTheToken: a 401 whose body echoes the
// Authorization header reaches neither the error (logs, state) nor the
// outcome (the model) with the token in it: it reads [redacted].
func TestUnauthorizedBodyEchoingTheToken(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid credentials","received":"`+r.Header.Get("Authorization")+`"}`)
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, identity.NewSecret([]byte(testToken)), srv.Client())
	o, err := c.Call(context.Background(), Health, json.RawMessage(`{}`))
	require.Error(t, err)
	require.Equal(t, outcome.Indeterminate, o.Status)
	for _, text := range []string{err.Error(), string(o.Content), o.Envelope()} {
		require.NotContains(t, text, testToken)
		require.Contains(t, text, "Bearer [redacted]")
	}
}
