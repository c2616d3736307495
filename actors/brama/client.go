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
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/supervision"
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
	// BaseURL is Brama's base URL, http or https. The endpoint paths are
	// joined beneath it, so a path prefix ("https://host/brama") is kept.
	BaseURL string
	// Secret is the family's HMAC key. It is revealed only to sign a
	// request and never appears in an error.
	Secret identity.Secret
	// Timeout bounds one whole exchange, from dialing to the last byte of
	// the response. Zero means DefaultTimeout.
	Timeout time.Duration
	// Transport carries the requests. Nil means a transport of the
	// client's own whose keep-alive pool suits a family of beings.
	Transport http.RoundTripper
	// Now is the clock for the signed timestamp. Nil means time.Now.
	Now func() time.Time
}

// Client calls one Brama service. It is safe for concurrent use; the
// gateway shares one Client among all in-flight completions.
type Client struct {
	secret      identity.Secret
	timeout     time.Duration
	timedOut    error // the cause recorded when timeout fires
	now         func() time.Time
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
		return nil, supervision.Errorf(supervision.ClassConfiguration, "BRAMA_BASE_URL: %w", err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, supervision.New(supervision.ClassConfiguration, "BRAMA_BASE_URL must use http or https")
	}
	c := &Client{
		secret:      cfg.Secret,
		timeout:     cfg.Timeout,
		now:         cfg.Now,
		healthURL:   base.JoinPath("health").String(),
		modelsURL:   base.JoinPath("v1", "models").String(),
		completeURL: base.JoinPath("v1", "chat", "completions").String(),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	c.timedOut = fmt.Errorf("timed out after %s", c.timeout)
	if c.now == nil {
		c.now = time.Now
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		transport = t
	}
	c.http = &http.Client{
		Transport: transport,
		// A signed body is never replayed to another address: a
		// redirect is answered as the non-2xx status it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// CloseIdleConnections closes kept-alive connections that are not in use.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Timeout is the bound on one exchange.
func (c *Client) Timeout() time.Duration { return c.timeout }

// Complete asks Brama for one completion and validates it
// (docs/brama.md#the-completion-request, docs/brama.md#response-validation).
// The body is serialized once; those bytes are hashed, signed and sent.
// Errors are supervision errors of class ClassBrama: permanent for a refused
// or malformed exchange, transient when the request never left (or Brama
// answered 429 or 5xx), indeterminate when it left and no complete response
// came back. Elapsed is set on both paths.
func (c *Client) Complete(ctx context.Context, p Params) (Completion, error) {
	body, err := json.Marshal(requestBody{
		Model:       p.Model,
		Messages:    p.Messages,
		MaxTokens:   p.MaxTokens,
		Temperature: p.Temperature,
		Tools:       p.Tools,
	})
	if err != nil {
		return Completion{}, permanent("encode completion request: %w", err)
	}
	digest := bodyDigest(body)
	unix := c.now().Unix()
	key := c.secret.Reveal()
	sig := signature(key, p.AgentID, unix, digest)
	clear(key)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.completeURL, bytes.NewReader(body))
	if err != nil {
		return Completion{}, permanent("build completion request: %w", err)
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header[headerAgentID] = []string{p.AgentID}
	req.Header[headerTimestamp] = []string{strconv.FormatInt(unix, 10)}
	req.Header[headerBodySHA256] = []string{digest}
	req.Header[headerSignature] = []string{sig}

	start := time.Now()
	respBody, err := c.exchange(req, true)
	elapsed := time.Since(start)
	if err != nil {
		return Completion{Elapsed: elapsed}, err
	}
	comp, err := parseCompletion(respBody)
	comp.Elapsed = elapsed
	return comp, err
}

// Health checks that Brama's /health answers {"status":"ok"}.
func (c *Client) Health(ctx context.Context) error {
	body, err := c.get(ctx, c.healthURL)
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
		return supervision.Upstream(supervision.ClassBrama, supervision.Transient, "health status is %q, not \"ok\"", *h.Status)
	}
	return nil
}

// Models lists the model ids Brama advertises on /v1/models, in its
// order.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	body, err := c.get(ctx, c.modelsURL)
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

// get fetches one of the unsigned read-only endpoints.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, permanent("build request: %w", err)
	}
	return c.exchange(req, false)
}

// exchange sends req within the client's timeout and returns the body of
// a 2xx response. hasEffect marks a request whose loss after sending
// leaves its remote effect unknown (a completion is paid for): such a
// failure is indeterminate; for a read-only request it is transient.
func (c *Client) exchange(req *http.Request, hasEffect bool) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(req.Context(), c.timeout, c.timedOut)
	defer cancel()
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
		return nil, transportError(ctx, err, sent.Load(), hasEffect)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	ok := resp.StatusCode >= 200 && resp.StatusCode <= 299
	if !ok {
		// The status alone classifies the failure; a body cut short
		// only shortens the message.
		return nil, statusError(resp.StatusCode, body)
	}
	if err != nil {
		return nil, transportError(ctx, err, true, hasEffect)
	}
	if len(body) > maxResponseBytes {
		return nil, permanent("response body exceeds %d bytes", maxResponseBytes)
	}
	return body, nil
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
		return supervision.Upstream(supervision.ClassBrama, supervision.Transient, "request not sent: %w", err)
	}
	kind := supervision.Transient
	if hasEffect {
		kind = supervision.Indeterminate
	}
	return supervision.Upstream(supervision.ClassBrama, kind, "no complete response: %w", err)
}

// statusError is the error for a non-2xx answer
// (docs/brama.md#error-classes): 429 and 5xx are transient, every other
// status permanent.
func statusError(code int, body []byte) error {
	kind := supervision.Permanent
	if code == http.StatusTooManyRequests || code >= 500 {
		kind = supervision.Transient
	}
	return supervision.Upstream(supervision.ClassBrama, kind, "HTTP %d: %s", code, errorText(body))
}

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
