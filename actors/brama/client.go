package brama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/wire/gateway"
	"github.com/wisent/singularity/supervision"
	"github.com/wisent/singularity/supervision/fault"
)

// DefaultTimeout bounds one HTTP exchange when ClientConfig.Timeout is
// zero (SINGULARITY_HTTP_TIMEOUT_SECS default).
const DefaultTimeout = 120 * time.Second

// maxResponseBytes caps how much of a response the client reads: a larger
// completion is refused rather than buffered without bound.
const maxResponseBytes = 16 << 20

// errorTextLimit is how many characters of a non-JSON error body make it
// into the error sentence (docs/brama.md#error-classes).
const errorTextLimit = 800

// ClientConfig configures a Client. Zero fields take the documented
// defaults.
type ClientConfig struct {
	// BaseURL is the gateway's base URL, http or https. The endpoint paths
	// are joined beneath it, so a path prefix ("https://host/brama") is
	// kept; a base whose path ends in /v1 gets "models" and
	// "chat/completions" (docs/brama.md#endpoints).
	BaseURL string
	// Auth is how requests are authenticated. Zero means
	// gateway.AuthHMAC.
	Auth gateway.Auth
	// Secret is the family's HMAC key (gateway.AuthHMAC). It is revealed only to
	// sign a request and never appears in an error.
	Secret identity.Secret
	// APIKey is the bearer key (gateway.AuthBearer), revealed only to build the
	// Authorization header of each request.
	APIKey identity.Secret
	// MaxTokensField names the request field that carries MaxTokens:
	// gateway.FieldMaxTokens (the zero value "" means it) or
	// gateway.FieldMaxCompletionTokens.
	MaxTokensField gateway.MaxTokensField
	// PromptCacheKey sends prompt_cache_key, the being's own id
	// (Params.BeingID), in every completion body (BRAMA_PROMPT_CACHE_KEY,
	// docs/brama.md#prompt-cache-key): providers that route on it keep a
	// being's prompts on the same cache. False sends none.
	PromptCacheKey bool
	// Retries is how many times one completion is sent again after a
	// retryable failure (docs/brama.md#retries). Zero means none.
	Retries int
	// Timeout bounds one whole completion, from dialing to the last byte of
	// the response, retries and their waits included; and each read-only
	// request. Zero means DefaultTimeout.
	Timeout time.Duration
	// Transport carries the requests. Nil means a transport of the
	// client's own whose keep-alive pool suits a family of beings.
	Transport http.RoundTripper
	// Clock is the client's one time source: the signed timestamp, a
	// completion's Elapsed and the waits between retries. Nil means the
	// wall clock (supervision.WallClock).
	Clock supervision.Clock
}

// Client calls one OpenAI-compatible gateway: Brama with HMAC signatures,
// or any other with a bearer key or none. It is safe for concurrent use;
// the gateway shares one Client among all in-flight completions.
type Client struct {
	auth        gateway.Auth
	secret      identity.Secret
	apiKey      identity.Secret
	maxField    gateway.MaxTokensField
	cacheKey    bool
	retries     int
	timeout     time.Duration
	timedOut    error // the cause recorded when timeout fires
	clock       supervision.Clock
	http        *http.Client
	healthURL   string
	modelsURL   string
	completeURL string
}

// NewClient returns a Client for cfg. It fails only on a base URL that is
// not an absolute http or https URL.
func NewClient(cfg ClientConfig) (*Client, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fault.Errorf(fault.ClassConfiguration, "BRAMA_BASE_URL: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fault.New(fault.ClassConfiguration, "BRAMA_BASE_URL must use http or https")
	}
	c := &Client{
		auth:     cfg.Auth,
		secret:   cfg.Secret,
		apiKey:   cfg.APIKey,
		maxField: cfg.MaxTokensField,
		cacheKey: cfg.PromptCacheKey,
		retries:  max(cfg.Retries, 0),
		timeout:  cfg.Timeout,
		clock:    cfg.Clock,
	}
	if c.auth == "" {
		c.auth = gateway.AuthHMAC
	}
	if c.maxField == "" {
		c.maxField = gateway.FieldMaxTokens
	}
	c.healthURL, c.modelsURL, c.completeURL = endpoints(base)
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	c.timedOut = fmt.Errorf("timed out after %s", c.timeout)
	if c.clock == nil {
		c.clock = supervision.WallClock{}
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		transport = t
	}
	c.http = &http.Client{
		Transport: transport,
		// A signed body (or a bearer key) is never replayed to another
		// address: a redirect is answered as the non-2xx status it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// endpoints joins the three paths beneath base (docs/brama.md#endpoints). A
// base whose path ends in /v1 is the providers' convention: the API paths
// go straight beneath it, and Brama's /health beside it.
func endpoints(base *url.URL) (health, models, complete string) {
	if strings.HasSuffix(strings.TrimRight(base.Path, "/"), "/v1") {
		root := *base
		root.Path = strings.TrimSuffix(strings.TrimRight(base.Path, "/"), "/v1")
		root.RawPath = ""
		return root.JoinPath("health").String(), base.JoinPath("models").String(), base.JoinPath("chat", "completions").String()
	}
	return base.JoinPath("health").String(), base.JoinPath("v1", "models").String(), base.JoinPath("v1", "chat", "completions").String()
}

// CloseIdleConnections closes kept-alive connections that are not in use.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Timeout is the bound on one completion, retries included.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Auth is the client's authentication mode.
func (c *Client) Auth() gateway.Auth { return c.auth }

// Complete asks the gateway for one completion and validates it
// (docs/brama.md#the-completion-request, docs/brama.md#response-validation):
// strictly for Brama, leniently for other gateways, whose quirks come back
// as Completion.Warnings. The body is the same bytes on every attempt: hashed,
// signed (Brama) and sent, written from the window as it goes out. A retryable failure is
// retried up to Retries times within Timeout (docs/brama.md#retries).
// Errors are supervision errors of class ClassBrama: permanent for a refused
// or malformed exchange, transient when the request never left (or the
// gateway answered 429 or 5xx), indeterminate when it left and no complete
// response came back. Elapsed is set on both paths; a malformed answer that
// carried a well-formed usage block comes back with that Usage and Billed
// set (docs/brama.md#billed-rejections).
func (c *Client) Complete(ctx context.Context, p Params) (Completion, error) {
	body, err := c.body(p)
	if err != nil {
		return Completion{}, permanent("encode completion request: %w", err)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, c.timedOut)
	defer cancel()
	start := c.clock.Now()
	var respBody []byte
	attempts := 0
	for {
		var a attempt
		respBody, a, err = c.completeOnce(ctx, p.AgentID, body)
		attempts++
		if err == nil {
			break
		}
		if attempts > c.retries || !a.retryable() || !c.wait(ctx, retryDelay(a, attempts-1, c.clock.Now())) {
			return Completion{Elapsed: c.clock.Now().Sub(start), Attempts: attempts, RequestBytes: body.size}, err
		}
	}
	elapsed := c.clock.Now().Sub(start)
	comp, err := parseCompletion(respBody, !c.auth.Brama(), ReservationUsage(body.size, p.MaxTokens))
	comp.Elapsed, comp.Attempts, comp.RequestBytes = elapsed, attempts, body.size
	return comp, err
}

// body is the completion body, with max tokens under the configured
// field name: the bytes json.Marshal gives a requestBody, written by
// hand so that the messages and the catalogue, encoded already, are not
// scanned and copied again (TestEncodeMatchesRequestBody). Only its small
// parts are made here: the window's messages are unpacked as the body is
// hashed and written (completionBody), so a request waiting for the wire
// holds no copy of the conversation.
func (c *Client) body(p Params) (*completionBody, error) {
	var tools []byte
	if len(p.Tools) > 0 { // omitted when empty, as omitempty does
		tools = p.ToolsEncoded
		if len(tools) == 0 {
			var err error
			if tools, err = json.Marshal(p.Tools); err != nil {
				return nil, err
			}
		}
	}
	model, err := json.Marshal(p.Model)
	if err != nil {
		return nil, err
	}
	temperature, err := json.Marshal(p.Temperature)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 0, len(model)+64+256*len(p.Messages))
	head = append(head, `{"model":`...)
	head = append(head, model...)
	head = append(head, `,"messages":[`...)
	for i, m := range p.Messages {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			head = append(head, ',')
		}
		head = append(head, data...)
	}
	tail := append(make([]byte, 0, 96), ']')
	if p.MaxTokens != 0 {
		if c.maxField == gateway.FieldMaxCompletionTokens {
			tail = append(tail, `,"max_completion_tokens":`...)
		} else {
			tail = append(tail, `,"max_tokens":`...)
		}
		tail = strconv.AppendInt(tail, int64(p.MaxTokens), 10)
	}
	tail = append(tail, `,"temperature":`...)
	tail = append(tail, temperature...)
	if len(tools) > 0 {
		tail = append(tail, `,"tools":`...)
	}
	end := make([]byte, 0, 48)
	if c.cacheKey && p.BeingID != "" {
		key, err := json.Marshal(p.BeingID)
		if err != nil {
			return nil, err
		}
		end = append(end, `,"prompt_cache_key":`...)
		end = append(end, key...)
	}
	end = append(end, '}')
	return newCompletionBody(head, p.Encoded, len(p.Messages) > 0, tail, tools, end), nil
}

// completeOnce sends the completion body once.
func (c *Client) completeOnce(ctx context.Context, agentID string, body *completionBody) ([]byte, attempt, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.completeURL, body.reader())
	if err != nil {
		return nil, attempt{}, permanent("build completion request: %w", err)
	}
	req.ContentLength = int64(body.size)
	req.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	req.Header["Content-Type"] = []string{"application/json"}
	c.authorize(req.Header, agentID, body, true)
	return c.exchange(ctx, req, true)
}

// Health checks the gateway: for Brama, that /health answers
// {"status":"ok"}; for any other gateway, which has no /health, that the
// model list answers a list (docs/configuration.md#doctor).
func (c *Client) Health(ctx context.Context) error {
	if !c.auth.Brama() {
		_, err := c.Models(ctx)
		return err
	}
	body, _, err := c.get(ctx, c.healthURL)
	if err != nil {
		return err
	}
	var h struct {
		Status *string `json:"status"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return permanent("invalid health response: %w", err)
	}
	if h.Status == nil {
		return permanent("invalid health response: missing status")
	}
	if *h.Status != "ok" {
		return fault.Upstream(fault.ClassBrama, fault.Transient, "health status is %q, not \"ok\"", *h.Status)
	}
	return nil
}

// Models lists the model ids the gateway advertises on its model list, in
// its order. A gateway that answers the list's URL with 404 has no list:
// the error, permanent, wraps ErrNoModelList.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	body, status, err := c.get(ctx, c.modelsURL)
	if status == http.StatusNotFound {
		return nil, fault.Upstream(fault.ClassBrama, fault.Permanent, "%w (%w)", ErrNoModelList, err)
	}
	if err != nil {
		return nil, err
	}
	var list struct {
		Data *[]struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, permanent("invalid models response: %w", err)
	}
	if list.Data == nil {
		return nil, permanent("invalid models response: missing data")
	}
	ids := make([]string, 0, len(*list.Data))
	for _, m := range *list.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// get fetches one of the read-only endpoints, unsigned (a bearer key is
// still sent) and within the client's timeout. status is the HTTP status
// of an answer other than 2xx, else 0.
func (c *Client) get(ctx context.Context, u string) (body []byte, status int, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, c.timedOut)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, permanent("build request: %w", err)
	}
	c.authorize(req.Header, "", nil, false)
	body, a, err := c.exchange(ctx, req, false)
	return body, a.status, err
}

// exchange sends req (whose context is ctx, which bounds it) and returns the
// body of a 2xx response, or the classified error and what the retry
// decision needs. hasEffect marks a request whose loss after sending leaves
// its remote effect unknown (a completion is paid for): such a failure is
// indeterminate; for a read-only request it is transient.
func (c *Client) exchange(ctx context.Context, req *http.Request, hasEffect bool) ([]byte, attempt, error) {
	var sent atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				sent.Store(true)
			}
		},
	}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))

	resp, err := c.http.Do(req)
	if err != nil {
		a := attempt{refused: !sent.Load() && errors.Is(err, syscall.ECONNREFUSED)}
		return nil, a, transportError(ctx, err, sent.Load(), hasEffect)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if !ok {
		// The status alone classifies the failure; a body cut short
		// only shortens the message.
		a := attempt{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		return nil, a, statusError(resp.StatusCode, c.redact(body), c.redact, hasEffect, !c.auth.Brama())
	}
	if err != nil {
		return nil, attempt{}, transportError(ctx, err, true, hasEffect)
	}
	if len(body) > maxResponseBytes {
		return nil, attempt{}, permanent("response body exceeds %d bytes", maxResponseBytes)
	}
	return body, attempt{}, nil
}

// redacted replaces a credential that a gateway echoes in an error body.
const redacted = "[redacted]"

// redact removes the client's credentials from an error body before any of
// it becomes an error sentence, and again from the message decoded from
// it: a gateway that echoes the key it refused, as is or JSON-escaped
// (identity.Forms), must not put it into a log or the journal.
func (c *Client) redact(body []byte) []byte {
	for _, s := range []identity.Secret{c.apiKey, c.secret} {
		if !s.IsSet() {
			continue
		}
		key := s.Reveal()
		forms := identity.Forms(key)
		clear(key)
		// Longest first, so that a form holding another goes whole.
		sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
		for _, f := range forms {
			if bytes.Contains(body, f) {
				body = bytes.ReplaceAll(body, f, []byte(redacted))
			}
			clear(f)
		}
	}
	return body
}

// transportError classifies a failure without a complete response.
func transportError(ctx context.Context, err error, sent, hasEffect bool) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // the URL is noise in a one-line sentence
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	if !sent {
		return fault.Upstream(fault.ClassBrama, fault.Transient, "request not sent: %w", err)
	}
	kind := fault.Transient
	if hasEffect {
		kind = fault.Indeterminate
	}
	return fault.Upstream(fault.ClassBrama, kind, "no complete response: %w", err)
}

// statusError is the error for a non-2xx answer
// (docs/brama.md#error-classes): 429 and 5xx are transient, every other
// status permanent, except that the answer to a completion sent to a
// gateway other than Brama (completion and lenient) that refused the
// request rather than the credentials is transient too (rejectedRequest).
// A completion refused with 404 rather than for its credentials wraps
// gateway.ErrModelNotServed, whatever the gateway. redact is applied to
// the message once it is decoded from body, which JSON escapes may have
// hidden a credential in.
func statusError(code int, body []byte, redact func([]byte) []byte, completion, lenient bool) error {
	msg := string(redact([]byte(errorText(body))))
	refused := completion && rejectedRequest(code, msg)
	kind := fault.Permanent
	if code == http.StatusTooManyRequests || code >= 500 || refused && lenient {
		kind = fault.Transient
	}
	err := fault.Upstream(fault.ClassBrama, kind, "HTTP %d: %s", code, msg)
	if refused && code == http.StatusNotFound {
		err.Err = gateway.ErrModelNotServed
	}
	return err
}

// rejectedRequest reports whether a gateway other than Brama refused one
// completion request rather than the being's credentials
// (docs/brama.md#rejected-requests): HTTP 400, 404, 413 or 422 whose
// message (already redacted) names no credential. Such a refusal fails the
// cycle, not the being: the next cycle sends another request (a new
// framing, a moved window), and an operator may fix the cause meanwhile (a
// model loaded, a parameter changed). 401 and 403, and a message about a
// key or another credential, stay permanent.
func rejectedRequest(code int, msg string) bool {
	switch code {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
	default:
		return false
	}
	lower := strings.ToLower(msg)
	for _, word := range credentialWords {
		if strings.Contains(lower, word) {
			return false
		}
	}
	return true
}

// credentialWords mark an error message about credentials; providers
// answer a bad key with 400 as well as 401 ("API key not valid").
var credentialWords = []string{"api key", "api_key", "apikey", "credential", "unauthori", "authenticat", "forbidden", "permission"}

// errorText is the message of {"error":{"message":…}} when the body has
// one, else the body's first 800 characters.
func errorText(body []byte) string {
	var e struct {
		Error *struct {
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Message != nil {
		return *e.Error.Message
	}
	n, i := 0, 0
	for i < len(body) && n < errorTextLimit {
		_, size := utf8.DecodeRune(body[i:])
		i += size
		n++
	}
	return string(body[:i])
}
