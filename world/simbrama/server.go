// Package simbrama is the embedded simulated Brama of the demo world
// (docs/demo.md#running-the-demo): a real HTTP server on a loopback port that
// verifies Brama's HMAC request headers
// (docs/brama.md#the-completion-request), serves /health, /v1/models and
// /v1/chat/completions, and answers completions with a deterministic scripted
// policy that uses the request's tool catalogue. The reply is a pure function
// of the request body, so restarts and resumes replay the same way.
// Everything it says is labelled a simulation.
//
// Like a real provider it caches prompt prefixes (Cache,
// docs/demo.md#the-prompt-cache): the usage it answers says how many prompt
// tokens were cached, and it keeps its own exact bill at Options.Prices,
// per caller (Accounts, Bill), for tests to hold a ledger to.
package simbrama

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wisent/singularity/internal/prices"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/wire/chat"
)

// The models the simulated Brama advertises.
const (
	ModelSmall = "sim-small"
	ModelLarge = "sim-large"
)

// maxBody bounds a completion request body.
const maxBody = 32 << 20

// shutdownGrace bounds how long Close waits for requests in flight.
const shutdownGrace = 5 * time.Second

// Options shape the scripted family. The zero value is a world where no
// being spawns children.
type Options struct {
	// RootName is the name of the root being: only a being of this name
	// spawns the children "Bo" (cycle 1) and "Cy" (cycle 2). Empty: none.
	RootName string
	// GrandchildParent names the child that spawns the grandchild "Di" on
	// its cycle 1 (e.g. "Bo"). Empty: no grandchild.
	GrandchildParent string
	// Now reads the clock for the timestamp window. Nil means time.Now.
	Now func() time.Time
	// Prices are the per-model prices the server bills at (the model
	// the request names); a model they do not list is billed at Price.
	// Zero prices bill nothing.
	Prices prices.Table
	Price  prices.Pair
	// Answered, when set, hears the being's name (as Stats.ByBeing
	// counts it) of every completion answered with 200, after it is
	// counted and before the answer is written.
	Answered func(being string)
	// Talks, when set, says on which cycles a being with the family
	// tools messages its relative, in place of the talk cycle (3) alone;
	// the root messages Bo and Cy in turn (Talkative: every cycle from
	// the third, the crash test's traffic between relatives).
	Talks func(cycle int) bool
}

// Talkative is Options.Talks for a world whose beings message their
// relatives on every cycle from the third.
func Talkative(cycle int) bool { return cycle >= talkCycle }

// Stats counts what the server has done, for tests and the demo summary.
type Stats struct {
	// Completions is the number of completions answered with 200.
	Completions uint64
	// Rejected is the number of completion requests refused (401, 400,
	// 405, 413).
	Rejected uint64
	// ByBeing counts answered completions per being name, as read from
	// the system message ("" when it is not in the initial form).
	ByBeing map[string]uint64
	// Tokens is the sum of total_tokens over answered completions.
	Tokens uint64
	// CachedTokens is the sum of their cached prompt tokens.
	CachedTokens uint64
}

// Server is a running simulated Brama. Close it when done.
type Server struct {
	secret []byte
	opts   Options
	url    string
	http   *http.Server
	served chan struct{}

	closeOnce sync.Once
	closeErr  error

	cache *Cache

	mu       sync.Mutex
	stats    Stats
	accounts map[string]Account
}

// Start listens on 127.0.0.1 on a free port and serves the simulated
// Brama until Close. Requests must be signed with secret, which must not
// be empty; Start keeps its own copy.
func Start(secret []byte, opts Options) (*Server, error) {
	if len(secret) == 0 {
		return nil, errors.New("simbrama: empty secret")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("simbrama: listen on loopback: %w", err)
	}
	s := &Server{
		secret:   append([]byte(nil), secret...),
		opts:     opts,
		url:      "http://" + ln.Addr().String(),
		served:   make(chan struct{}),
		cache:    NewCache(),
		stats:    Stats{ByBeing: map[string]uint64{}},
		accounts: map[string]Account{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/v1/chat/completions", s.handleCompletion)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the base URL to configure as the Brama URL, e.g.
// "http://127.0.0.1:41234" (no trailing slash).
func (s *Server) URL() string { return s.url }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.ByBeing = maps.Clone(s.stats.ByBeing)
	return out
}

// Accounts returns a snapshot of every caller's account, by caller: the
// prompt_cache_key a request sent, else its x-agent-id.
func (s *Server) Accounts() map[string]Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.accounts)
}

// Bill is what the server has billed all callers together, exactly.
func (s *Server) Bill() money.Amount {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := money.Zero
	for _, a := range s.accounts {
		total = total.Add(a.Billed)
	}
	return total
}

// Close stops the server: it waits up to a few seconds for requests in
// flight, then drops the rest, and returns once the serving goroutine has
// ended. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.closeErr = fmt.Errorf("simbrama: shutdown: %w", errors.Join(err, s.http.Close()))
		}
		<-s.served
	})
	return s.closeErr
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// model is one entry of /v1/models.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{
		{ModelSmall, "model", "simulation"},
		{ModelLarge, "model", "simulation"},
	}})
}

// handleCompletion authenticates, decodes and answers one completion.
func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.reject(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.reject(w, http.StatusRequestEntityTooLarge, "request body too large or unreadable")
		return
	}
	agentID, err := verify(r.Header, body, s.secret, s.opts.Now())
	if err != nil {
		s.reject(w, http.StatusUnauthorized, err.Error())
		return
	}
	var req completionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.reject(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return
	}
	if !known(req.Model) {
		s.reject(w, http.StatusBadRequest, "unknown model: "+req.Model)
		return
	}
	var wire wireRequest
	_ = json.Unmarshal(body, &wire) // it decoded as a completionRequest
	caller := wire.PromptCacheKey
	if caller == "" {
		caller = agentID
	}
	prompt, cached := s.cache.Serve(caller, wire.Messages)
	resp, u := complete(req, body, s.opts, prompt, cached)
	c := cost(price(s.opts, req.Model), u)
	name := read(req.Messages).name
	s.mu.Lock()
	s.stats.Completions++
	s.stats.ByBeing[name]++
	s.stats.Tokens += u.TotalTokens
	s.stats.CachedTokens += u.CachedTokens
	s.accounts[caller] = s.accounts[caller].add(u, c)
	s.mu.Unlock()
	if s.opts.Answered != nil {
		s.opts.Answered(name)
	}
	writeJSON(w, http.StatusOK, resp)
}

// wireRequest is what the cache reads of a completion request: the
// messages exactly as sent, whose serialization is the prompt it caches
// and counts, and the prompt cache key.
type wireRequest struct {
	Messages       json.RawMessage `json:"messages"`
	PromptCacheKey string          `json:"prompt_cache_key"`
}

// known accepts the advertised models and the selectors of
// docs/brama.md#model-selection.
func known(m string) bool {
	switch {
	case m == ModelSmall, m == ModelLarge, m == "any", m == "any-vision-capable", m == "best":
		return true
	case strings.HasPrefix(m, "task:"):
		return true
	}
	return false
}

func (s *Server) reject(w http.ResponseWriter, code int, message string) {
	s.mu.Lock()
	s.stats.Rejected++
	s.mu.Unlock()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	e.Error.Message = message
	writeJSON(w, code, e)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // only plain data is written; cannot happen
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// completion is an OpenAI-compatible chat completion with one choice.
type completion struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Model   string           `json:"model"`
	Choices []choice         `json:"choices"`
	Usage   chat.UsageReport `json:"usage"`
}

type choice struct {
	Index        int           `json:"index"`
	Message      choiceMessage `json:"message"`
	FinishReason string        `json:"finish_reason"`
}

// choiceMessage is the assistant message; content is null when the reply
// only calls tools, as real OpenAI-compatible servers send it.
type choiceMessage struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	ToolCalls []chat.ToolCall `json:"tool_calls,omitempty"`
}

// complete runs the policy and wraps its reply as a completion of prompt
// tokens, cached of them cached; it returns the usage it reports too. The
// id derives from the body, so the same request with the same cache
// always yields the same bytes.
func complete(req completionRequest, body []byte, opts Options, prompt, cached uint64) (completion, chat.Usage) {
	rep := decide(req, opts)
	sum := sha256.Sum256(body)
	msg := choiceMessage{Role: chat.RoleAssistant, ToolCalls: rep.Calls}
	finish := "tool_calls"
	if len(rep.Calls) == 0 {
		msg.Content = &rep.Content
		finish = "stop"
	}
	u := usage(prompt, cached, rep)
	return completion{
		ID:      "simcmpl-" + hex.EncodeToString(sum[:8]),
		Object:  "chat.completion",
		Model:   req.Model,
		Choices: []choice{{Message: msg, FinishReason: finish}},
		Usage:   u.Report(),
	}, u
}

// usage is a completion's usage: prompt tokens (Tokens of the messages'
// serialization), cached of them cached, and a completion token per four
// bytes (rounded up) of the reply's content plus its tool call arguments.
func usage(prompt, cached uint64, rep reply) chat.Usage {
	out := len(rep.Content)
	for _, c := range rep.Calls {
		out += len(c.Function.Arguments)
	}
	u := chat.Usage{PromptTokens: prompt, CompletionTokens: Tokens(out), CachedTokens: cached}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
