package most

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/outcome"
	"github.com/wisent/singularity/supervision/fault"
)

// Error codes of Most tool failures.
const (
	CodeUnavailable      = "most_unavailable"
	CodeInvalidArguments = "invalid_arguments"
	CodeRemote           = "remote"
	CodeUnknownTool      = "unknown_tool"
)

// Argument bounds (docs/tools.md#most-tools), generous for a phone
// number, an address handle and one chat message.
const (
	MaxAddressBytes = 256
	MaxRecipients   = 100
	MaxTextBytes    = 16 << 10
	// maxBody bounds how much of a Most response is read.
	maxBody = 1 << 20
	// maxExcerpt bounds the part of an error body shown to the model.
	maxExcerpt = 300
)

// DefaultTimeout is the HTTP timeout when no client is given
// (SINGULARITY_HTTP_TIMEOUT_SECS default).
const DefaultTimeout = 120 * time.Second

// Client calls Most over HTTP with a bearer token. It is safe for
// concurrent use.
type Client struct {
	base  string
	token identity.Secret
	http  *http.Client
}

// New returns a client for the Most service at baseURL (MOST_BASE_URL).
// An unset token leaves the client usable but every call fails with
// most_unavailable. A nil httpClient means one with DefaultTimeout.
func New(baseURL string, token identity.Secret, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: httpClient}
}

// Call runs Most tool name with its raw JSON arguments. The outcome is
// what the model sees; err, when not nil, is the classified upstream
// failure behind an indeterminate outcome, for the log (it never holds
// the token).
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (outcome.Outcome, error) {
	if !slices.Contains(Names(), name) {
		return outcome.Failure(CodeUnknownTool, "tool is not in the current catalog"), nil
	}
	if !c.token.IsSet() {
		return outcome.Failure(CodeUnavailable, "Most credential is not configured"), nil
	}
	switch name {
	case Health:
		return c.health(ctx, args)
	case CreateChat:
		return c.createChat(ctx, args)
	default:
		return c.sendMessage(ctx, args)
	}
}

// HealthReport is Most's answer to GET /healthz, as the most_health tool
// and doctor read it.
type HealthReport struct {
	Status      json.RawMessage `json:"status"`
	Backends    json.RawMessage `json:"backends"`
	Composition json.RawMessage `json:"composition"`
}

// SendCapable reports whether the report names at least one backend that
// can send: backends is a non-empty string other than "none", or an array
// holding such a string.
func (h HealthReport) SendCapable() bool {
	capable := func(s string) bool {
		s = strings.TrimSpace(s)
		return s != "" && !strings.EqualFold(s, "none")
	}
	var one string
	if json.Unmarshal(h.Backends, &one) == nil {
		return capable(one)
	}
	var many []string
	if json.Unmarshal(h.Backends, &many) == nil {
		return slices.ContainsFunc(many, capable)
	}
	return false
}

// CheckHealth is doctor's Most preflight: GET /healthz must answer and
// report a send-capable backend. Failures are classified ClassMost.
func (c *Client) CheckHealth(ctx context.Context) (HealthReport, error) {
	if !c.token.IsSet() {
		return HealthReport{}, fault.New(fault.ClassMost, "Most credential is not configured")
	}
	body, err := c.do(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return HealthReport{}, err
	}
	var h HealthReport
	if err := json.Unmarshal(body, &h); err != nil {
		return HealthReport{}, fault.Upstream(fault.ClassMost, fault.Permanent, "health answer is not a JSON object")
	}
	if !h.SendCapable() {
		return h, fault.Upstream(fault.ClassMost, fault.Permanent, "no send-capable backend")
	}
	return h, nil
}

func (c *Client) health(ctx context.Context, args json.RawMessage) (outcome.Outcome, error) {
	if _, bad := parseArgs(args); bad != nil {
		return *bad, nil
	}
	body, err := c.do(ctx, http.MethodGet, "/healthz", nil)
	if err != nil {
		return remoteFailure(err), err
	}
	var h HealthReport
	if err := json.Unmarshal(body, &h); err != nil {
		err := failed(fault.Permanent, "Most health answer is not a JSON object", "health answer is not a JSON object")
		return remoteFailure(err), err
	}
	content, _ := json.Marshal(struct {
		Status      json.RawMessage `json:"status"`
		Backends    json.RawMessage `json:"backends"`
		Composition json.RawMessage `json:"composition"`
	}{orNull(h.Status), orNull(h.Backends), orNull(h.Composition)})
	return outcome.Succeeded(content), nil
}

// message is the Most message body of docs/tools.md#most-tools.
type message struct {
	Parts            []part `json:"parts"`
	PreferredService string `json:"preferred_service,omitempty"`
}

type part struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (c *Client) createChat(ctx context.Context, args json.RawMessage) (outcome.Outcome, error) {
	obj, bad := parseArgs(args, "from", "to", "text", "preferred_service")
	if bad != nil {
		return *bad, nil
	}
	from, ok := address(obj["from"])
	if !ok {
		return invalid("from"), nil
	}
	to, ok := recipients(obj["to"])
	if !ok {
		return invalid("to"), nil
	}
	msg, bad := messageArgs(obj)
	if bad != nil {
		return *bad, nil
	}
	req, _ := json.Marshal(struct {
		From    string   `json:"from"`
		To      []string `json:"to"`
		Message message  `json:"message"`
	}{from, to, msg})
	body, err := c.do(ctx, http.MethodPost, "/v3/chats", req)
	if err != nil {
		return remoteFailure(err), err
	}
	o, err := created(body)
	if err != nil {
		return remoteFailure(err), err
	}
	o.ChatID = pointerString(body, "/id")
	o.MessageID = pointerString(body, "/message/id")
	return o, nil
}

func (c *Client) sendMessage(ctx context.Context, args json.RawMessage) (outcome.Outcome, error) {
	obj, bad := parseArgs(args, "chat_id", "text", "preferred_service")
	if bad != nil {
		return *bad, nil
	}
	chatID, ok := chatIDArg(obj["chat_id"])
	if !ok {
		return invalid("chat_id"), nil
	}
	msg, bad := messageArgs(obj)
	if bad != nil {
		return *bad, nil
	}
	req, _ := json.Marshal(struct {
		Message message `json:"message"`
	}{msg})
	body, err := c.do(ctx, http.MethodPost, "/v3/chats/"+chatID+"/messages", req)
	if err != nil {
		return remoteFailure(err), err
	}
	o, err := created(body)
	if err != nil {
		return remoteFailure(err), err
	}
	o.MessageID = pointerString(body, "/id")
	return o, nil
}

// callError is a failed Most call: the classified error for the log and
// the sentence shown to the model, which names no URL or path.
type callError struct {
	err    *fault.Error
	public string
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

func failed(kind fault.Kind, public, format string, args ...any) *callError {
	return &callError{err: fault.Upstream(fault.ClassMost, kind, format, args...), public: public}
}

// do sends one request and returns the body of a 2xx answer. Failures are
// *callError: no connection is transient; a failure after the request may
// have been delivered is indeterminate; HTTP 503 is indeterminate, other
// 5xx (and 429) transient, other statuses permanent.
func (c *Client) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, failed(fault.Permanent, "Most request could not be built", "build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+string(c.token.Reveal()))
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, failed(fault.Transient, "Most could not be reached", "%s %s: %w", method, path, err)
		}
		// The URL error names the URL only; the token is in a header.
		return nil, failed(fault.Indeterminate, "Most connection failed after the request was sent", "%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, failed(fault.Indeterminate, "Most answer could not be read", "%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return data, nil
	}
	kind := fault.Permanent
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		kind = fault.Indeterminate
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		kind = fault.Transient
	}
	// An error body may echo the request, bearer token included, as is
	// or JSON-escaped: the token never goes further than this
	// (docs/tools.md#the-output-boundary).
	data = []byte(boundary.NewSecrets(c.token.Reveal()).RedactString(string(data)))
	text := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, excerpt(data))
	return nil, failed(kind, "Most answered "+text, "%s %s: %s", method, path, text)
}

// remoteFailure is the outcome of a failed Most call: indeterminate with
// code remote and a sentence naming the failure and its kind.
func remoteFailure(err error) outcome.Outcome {
	public := "Most call failed"
	var ce *callError
	if errors.As(err, &ce) {
		public = ce.public
	}
	return outcome.Unknown(CodeRemote, fmt.Sprintf("%s (%v)", public, fault.KindOf(err)))
}

// created turns a 2xx body into the success outcome carrying it. A body
// that is not JSON leaves the effect unknown.
func created(body []byte) (outcome.Outcome, error) {
	if !json.Valid(body) {
		return outcome.Outcome{}, failed(fault.Indeterminate, "Most answer is not JSON", "answer is not JSON")
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, body)
	return outcome.Succeeded(compact.Bytes()), nil
}

// pointerString reads the string at a JSON pointer of the form /a/b, or "".
func pointerString(body []byte, pointer string) string {
	var v any = nil
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	for key := range strings.SplitSeq(strings.TrimPrefix(pointer, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[key]
	}
	s, _ := v.(string)
	return s
}

// RecordCreated adds the outcome's chat and message ids to res, once each.
func RecordCreated(res *state.CreatedResources, o outcome.Outcome) {
	if o.ChatID != "" && !slices.Contains(res.ChatIDs, o.ChatID) {
		res.ChatIDs = append(res.ChatIDs, o.ChatID)
	}
	if o.MessageID != "" && !slices.Contains(res.MessageIDs, o.MessageID) {
		res.MessageIDs = append(res.MessageIDs, o.MessageID)
	}
}

// parseArgs decodes an arguments object that may hold only the given keys.
func parseArgs(raw json.RawMessage, keys ...string) (map[string]json.RawMessage, *outcome.Outcome) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		o := outcome.Failure(CodeInvalidArguments, "arguments must be a JSON object")
		return nil, &o
	}
	extra := make([]string, 0)
	for k := range obj {
		if !slices.Contains(keys, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		o := invalid(extra[0])
		return nil, &o
	}
	return obj, nil
}

func invalid(key string) outcome.Outcome {
	return outcome.Failure(CodeInvalidArguments, key+" is invalid")
}

// text decodes a string argument, trims it and checks it is non-empty,
// within max bytes and free of control characters (line breaks and tabs
// allowed when multiline).
func text(raw json.RawMessage, max int, multiline bool) (string, bool) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	s = strings.TrimSpace(s)
	bad := func(r rune) bool {
		return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\r' || r == '\t'))
	}
	if s == "" || len(s) > max || strings.ContainsFunc(s, bad) {
		return "", false
	}
	return s, true
}

func address(raw json.RawMessage) (string, bool) { return text(raw, MaxAddressBytes, false) }

func recipients(raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if raw == nil || json.Unmarshal(raw, &items) != nil || len(items) == 0 || len(items) > MaxRecipients {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := address(it)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func chatIDArg(raw json.RawMessage) (string, bool) {
	s, ok := text(raw, 36, false)
	if !ok || len(s) != 36 {
		return "", false
	}
	if _, err := uuid.Parse(s); err != nil {
		return "", false
	}
	return s, true
}

// messageArgs reads text and the optional preferred_service.
func messageArgs(obj map[string]json.RawMessage) (message, *outcome.Outcome) {
	t, ok := text(obj["text"], MaxTextBytes, true)
	if !ok {
		o := invalid("text")
		return message{}, &o
	}
	msg := message{Parts: []part{{Type: "text", Value: t}}}
	if raw, present := obj["preferred_service"]; present && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) != nil || !slices.Contains(services, s) {
			o := invalid("preferred_service")
			return message{}, &o
		}
		msg.PreferredService = s
	}
	return msg, nil
}

// excerpt is the start of an error body, valid UTF-8 and on one line.
func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > maxExcerpt {
		s = s[:maxExcerpt]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if s == "" {
		return "empty answer"
	}
	return s
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}
