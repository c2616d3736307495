// Package bramatest runs a real Brama for tests: an httptest server that
// checks the HMAC headers of docs/brama.md#the-completion-request with its
// own copy of the secret, serves /health and /v1/models, and answers
// /v1/chat/completions from a script — a queue of canned replies, then a
// handler function — while recording every request it receives for later
// assertions.
//
// With Config.Auth "bearer" or "none" it is instead any other
// OpenAI-compatible gateway (docs/brama.md#other-openai-compatible-gateways):
// it checks Authorization: Bearer against its own copy of the key (or that
// no credentials came at all), serves only /v1/models and
// /v1/chat/completions under a /v1 base (URL ends in /v1; there is no
// /health), and answers with whatever quirks the script holds (replies.go).
//
// It deliberately shares no code with the runtime's client, so a test
// against it checks the client's signing rather than agreeing with it.
package bramatest

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wisent/singularity/internal/wire/chat"
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Auth is "hmac" (the zero value: Brama), "bearer" or "none" (any
	// other OpenAI-compatible gateway, without /health, under /v1).
	Auth string
	// Secret is the server's own copy of the HMAC key. Required with
	// hmac.
	Secret []byte
	// APIKey is the server's own copy of the bearer key. Required with
	// bearer: every request must carry Authorization: Bearer <APIKey>,
	// else 401. With none, a request carrying any Authorization header is
	// refused (400), so a test sees credentials that should not be sent.
	APIKey []byte
	// Prefix is a path prefix all routes live under ("/brama"); empty
	// means the routes sit at the root. URL includes it.
	Prefix string
	// Models is what /v1/models lists. Nil means {"test-model"}.
	Models []string
	// NoModelList makes /v1/models answer 404, as a server without a
	// model list does.
	NoModelList bool
	// HealthStatus is the "status" /health reports. Empty means "ok".
	HealthStatus string
	// MaxSkew, when positive, refuses timestamps further than this from
	// Now (401 "stale timestamp"). Zero accepts any timestamp.
	MaxSkew time.Duration
	// Now is the server's clock for MaxSkew. Nil means time.Now.
	Now func() time.Time
	// DiscardRequests stops the server from recording requests, so a
	// benchmark's memory does not grow with b.N. Each body is then read
	// into a buffer the server reuses: a Handler may read Request.Body
	// only until it returns.
	DiscardRequests bool
	// SkimRequests checks a completion body's shape (a JSON object with a
	// model and a non-empty messages array, every message an object with
	// a role) without decoding the messages; Request.Completion is then
	// nil and Request.Skim says what a scripted policy needs. A
	// benchmark's in-process server costs its rounds little more than the
	// HTTP exchange then, as a remote gateway would, instead of a full
	// decode that grows with the window on the same two cores and in the
	// same heap.
	SkimRequests bool
	// Handler answers a verified completion request when the queue is
	// empty. Nil means queue-only: an unscripted request gets 500
	// "bramatest: no scripted reply".
	Handler func(*Request) Reply
}

// Request is one request the server received, recorded after it was
// read and before it was answered.
type Request struct {
	Method string
	Path   string      // without the prefix
	Header http.Header // as received
	Body   []byte      // the raw bytes
	// Verified reports whether the signature headers matched the body and
	// the secret (always false for the unsigned GET endpoints); with
	// bearer, whether the key matched; with none, that no credentials
	// came.
	Verified bool
	// Completion is Body decoded, for POST /v1/chat/completions with a
	// JSON body.
	Completion *CompletionBody
	// Skim is what a skimming server (SkimRequests) read of a completion
	// body.
	Skim *Skim
}

// Skim is what a skimming server reads of a completion request: how many
// messages it has, the last one's role and the first one's content.
type Skim struct {
	Messages int
	LastRole string
	First    string
}

// CompletionBody is a decoded completion request. Temperature keeps its
// exact JSON text.
type CompletionBody struct {
	Model               string         `json:"model"`
	Messages            []chat.Message `json:"messages"`
	MaxTokens           int            `json:"max_tokens"`
	MaxCompletionTokens int            `json:"max_completion_tokens"`
	Temperature         json.Number    `json:"temperature"`
	Tools               []chat.Tool    `json:"tools"`
}

// Reply is one scripted answer to a completion request.
type Reply struct {
	// Status is the HTTP status. Zero means 200.
	Status int
	// Header is added to the response's headers (Retry-After).
	Header http.Header
	// Body is sent as is when non-nil; otherwise JSON is marshalled.
	Body []byte
	// JSON is the value to marshal as the body (e.g. a Response).
	JSON any
	// DropMidResponse makes the server write the status line, headers
	// and half of the body, then close the connection: the client sees a
	// response cut short after its request was delivered.
	DropMidResponse bool
	// Stall makes the server hold the request until the client goes away
	// or the server closes, without answering: the client's timeout
	// fires after its request was delivered.
	Stall bool
}

// Response is an OpenAI-compatible completion body.
type Response struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []Choice `json:"choices"`
	// Usage is omitted when nil. Completion writes it in OpenAI's form
	// (chat.Usage.Report); a test sets any other form here.
	Usage *chat.UsageReport `json:"usage,omitempty"`
}

// Choice is one completion choice.
type Choice struct {
	Index        int          `json:"index"`
	Message      ReplyMessage `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

// ReplyMessage is the assistant message of a choice. A nil Content is
// sent as null.
type ReplyMessage struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	ToolCalls []chat.ToolCall `json:"tool_calls,omitempty"`
}

// Server is a running test Brama. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL to configure the client with, prefix included.
	URL string

	cfg  Config
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []Request
	// queue holds the scripted replies not yet used.
	queue   []Reply
	models  []string
	handler func(*Request) Reply
}

// Start runs a Server for the life of tb; it is closed at cleanup.
func Start(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	switch cfg.Auth {
	case "", "hmac":
		if len(cfg.Secret) == 0 {
			tb.Fatal("bramatest: Config.Secret is required")
		}
	case "bearer":
		if len(cfg.APIKey) == 0 {
			tb.Fatal("bramatest: Config.APIKey is required with bearer")
		}
	case "none":
	default:
		tb.Fatalf("bramatest: unknown Config.Auth %q", cfg.Auth)
	}
	s := New(cfg)
	tb.Cleanup(s.Close)
	return s
}

// New runs a Server until Close. Prefer Start in tests.
func New(cfg Config) *Server {
	if cfg.Models == nil {
		cfg.Models = []string{"test-model"}
	}
	if cfg.HealthStatus == "" {
		cfg.HealthStatus = "ok"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	s := &Server{cfg: cfg, models: cfg.Models, handler: cfg.Handler}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + cfg.Prefix
	if s.openAI() {
		s.URL += "/v1"
	}
	return s
}

// Close shuts the server down, closing every connection.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue appends replies to the script; each completion request takes
// the oldest one left.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// SetHandler replaces the function that answers once the queue is empty.
func (s *Server) SetHandler(h func(*Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// SetModels replaces what /v1/models lists.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), ids...)
}

// Requests returns a copy of every request received so far, oldest
// first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Completions returns the completion requests received so far whose
// signature verified, oldest first.
func (s *Server) Completions() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Completion != nil && r.Verified {
			out = append(out, r)
		}
	}
	return out
}

// AskedModels returns the model of each completion request Completions
// returns, in its order.
func (s *Server) AskedModels() []string {
	var out []string
	for _, r := range s.Completions() {
		out = append(out, r.Completion.Model)
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, s.cfg.Prefix)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	var body []byte
	var err error
	if s.cfg.DiscardRequests {
		buf := bodyBuffers.Get().(*bytes.Buffer)
		defer bodyBuffers.Put(buf)
		buf.Reset()
		_, err = buf.ReadFrom(r.Body)
		body = buf.Bytes()
	} else {
		body, err = io.ReadAll(r.Body)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	rec := Request{Method: r.Method, Path: path, Header: r.Header.Clone(), Body: body}
	if s.openAI() {
		if msg, status := s.checkKey(r.Header); msg != "" {
			s.record(rec)
			writeError(w, status, msg)
			return
		}
		rec.Verified = true
	}
	switch {
	case r.Method == http.MethodGet && path == "/health" && !s.openAI():
		s.record(rec)
		writeJSON(w, http.StatusOK, map[string]string{"status": s.cfg.HealthStatus})
	case r.Method == http.MethodGet && path == "/v1/models" && !s.cfg.NoModelList:
		s.record(rec)
		s.mu.Lock()
		data := make([]map[string]string, 0, len(s.models))
		for _, id := range s.models {
			data = append(data, map[string]string{"id": id, "object": "model"})
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
	case r.Method == http.MethodPost && path == "/v1/chat/completions":
		s.serveCompletion(w, r, rec)
	default:
		s.record(rec)
		writeError(w, http.StatusNotFound, "not found")
	}
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, rec Request) {
	shaped := false
	if s.cfg.SkimRequests {
		rec.Skim = skim(rec.Body)
		shaped = rec.Skim != nil
	} else {
		var cb CompletionBody
		if json.Unmarshal(rec.Body, &cb) == nil {
			rec.Completion = &cb
			shaped = true
		}
	}
	if !s.openAI() {
		if msg := s.verify(r.Header, rec.Body); msg != "" {
			s.record(rec)
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		rec.Verified = true
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.record(rec)
		writeError(w, http.StatusBadRequest, "content-type must be application/json")
		return
	}
	if !shaped {
		s.record(rec)
		writeError(w, http.StatusBadRequest, "body is not a completion request")
		return
	}
	s.record(rec)
	reply := s.next(&rec)
	switch {
	case reply.Stall:
		<-r.Context().Done()
		return
	case reply.DropMidResponse:
		dropMidResponse(w, reply.body())
		return
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	for k, v := range reply.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(reply.body())
}

// bodyBuffers are the buffers a server that discards its requests reads
// bodies into.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// skim reads what Skim holds of body, or nil when body has no completion
// request's shape (SkimRequests).
func skim(body []byte) *Skim {
	var shape struct {
		Model    string `json:"model"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &shape) != nil || shape.Model == "" || len(shape.Messages) == 0 {
		return nil
	}
	for _, m := range shape.Messages {
		if m.Role == "" {
			return nil
		}
	}
	return &Skim{Messages: len(shape.Messages), LastRole: shape.Messages[len(shape.Messages)-1].Role, First: firstContent(body)}
}

// firstContent is the content of the first message of a completion body
// known to be well shaped, read token by token up to it ("" when it has
// none): nothing after it is decoded.
func firstContent(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	// Keys of the body's object until "messages", then the first
	// message's keys until "content"; any other value is skipped whole.
	skipValue := func() bool {
		var v json.RawMessage
		return dec.Decode(&v) == nil
	}
	key := func(want string) bool {
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			if t == want {
				return true
			}
			if !skipValue() {
				return false
			}
		}
		return false
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') || !key("messages") {
		return ""
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return ""
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') || !key("content") {
		return ""
	}
	var content string
	if dec.Decode(&content) != nil {
		return ""
	}
	return content
}

// openAI reports whether the server plays a gateway other than Brama.
func (s *Server) openAI() bool { return s.cfg.Auth == "bearer" || s.cfg.Auth == "none" }

// checkKey checks the credentials of a non-Brama request and returns the
// refusal message and status, or "" when they hold.
func (s *Server) checkKey(h http.Header) (string, int) {
	got, present := h["Authorization"]
	if s.cfg.Auth == "none" {
		if present {
			return "this server takes no credentials", http.StatusBadRequest
		}
		return "", 0
	}
	want := "Bearer " + string(s.cfg.APIKey)
	if len(got) != 1 || !hmac.Equal([]byte(got[0]), []byte(want)) {
		return "invalid api key", http.StatusUnauthorized
	}
	return "", 0
}

// verify checks the signature headers against body and the secret and
// returns the refusal message, or "" when they hold.
func (s *Server) verify(h http.Header, body []byte) string {
	agent, ts := h.Get("X-Agent-Id"), h.Get("X-Agent-Timestamp")
	digest, sig := h.Get("X-Agent-Body-Sha256"), h.Get("X-Agent-Signature")
	if agent == "" || ts == "" || digest == "" || sig == "" {
		return "invalid signature"
	}
	sum := sha256.Sum256(body)
	if digest != hex.EncodeToString(sum[:]) {
		return "invalid signature"
	}
	mac := hmac.New(sha256.New, s.cfg.Secret)
	fmt.Fprintf(mac, "%s:%s:%s", agent, ts, digest)
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return "invalid signature"
	}
	if s.cfg.MaxSkew > 0 {
		unix, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return "invalid signature"
		}
		if d := s.cfg.Now().Sub(time.Unix(unix, 0)); d > s.cfg.MaxSkew || -d > s.cfg.MaxSkew {
			return "stale timestamp"
		}
	}
	return ""
}

func (s *Server) record(r Request) {
	if s.cfg.DiscardRequests {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

// next takes the oldest queued reply, else asks the handler.
func (s *Server) next(r *Request) Reply {
	s.mu.Lock()
	if len(s.queue) > 0 {
		reply := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return reply
	}
	h := s.handler
	s.mu.Unlock()
	if h == nil {
		return ErrorReply(http.StatusInternalServerError, "bramatest: no scripted reply")
	}
	return h(r)
}

func (r Reply) body() []byte {
	if r.Body != nil {
		return r.Body
	}
	b, err := json.Marshal(r.JSON)
	if err != nil {
		panic(fmt.Sprintf("bramatest: reply JSON: %v", err))
	}
	return b
}

// dropMidResponse writes a 200 head announcing all of body, then half of
// it, and closes the connection.
func dropMidResponse(w http.ResponseWriter, body []byte) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("bramatest: hijack: %v", err))
	}
	defer conn.Close()
	writeHead(buf, len(body))
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
}

func writeHead(buf *bufio.ReadWriter, length int) {
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", length)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}

// UnansweredToolCalls lists, as "request <i>: <call id>", every tool call
// of an assistant message in a verified completion request that no tool
// message right after it answers: what an OpenAI-compatible server
// refuses with HTTP 400. Empty when every request was well formed.
func (s *Server) UnansweredToolCalls() []string {
	var out []string
	for i, req := range s.Completions() {
		msgs := req.Completion.Messages
		for j, m := range msgs {
			if m.Role != chat.RoleAssistant || len(m.ToolCalls) == 0 {
				continue
			}
			answered := map[string]bool{}
			for _, r := range msgs[j+1:] {
				if r.Role != chat.RoleTool {
					break
				}
				answered[r.ToolCallID] = true
			}
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					out = append(out, fmt.Sprintf("request %d: %s", i, c.ID))
				}
			}
		}
	}
	return out
}
