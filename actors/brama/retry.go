package brama

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds of the waits between attempts (docs/brama.md#retries).
const (
	firstBackoff  = time.Second
	maxRetryDelay = 60 * time.Second
)

// attempt is what one exchange left behind for the retry decision.
type attempt struct {
	status     int    // the HTTP status; 0 when no response came
	retryAfter string // the Retry-After header of that response
	refused    bool   // the connection was refused: nothing was sent
}

// retryable reports whether a failed attempt may be sent again: HTTP 429,
// 502, 503 and 504 (the gateway says it did not do the work) and a refused
// connection (the request never left). Anything that may have reached the
// model — a timeout, a dropped response, a 500 — is never repeated, since it
// may already have been paid for.
func (a attempt) retryable() bool {
	switch a.status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return a.status == 0 && a.refused
}

// retryDelay is the wait before retry number n (0 for the first): the
// response's Retry-After (seconds or an HTTP date, relative to now) when it
// has one, else 1 s doubled per earlier retry; at most 60 s either way.
func retryDelay(a attempt, n int, now time.Time) time.Duration {
	if d, ok := parseRetryAfter(a.retryAfter, now); ok {
		return min(d, maxRetryDelay)
	}
	d := firstBackoff
	for range n {
		if d >= maxRetryDelay {
			break
		}
		d *= 2
	}
	return min(d, maxRetryDelay)
}

// parseRetryAfter reads a Retry-After value: delay-seconds or an HTTP
// date. A date in the past is no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// wait sleeps d on the client's clock; it reports false, at once, when
// ctx ends first or when d would outlast ctx's deadline (the retry could
// not finish in time, so the failure stands).
func (c *Client) wait(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	fired := make(chan struct{})
	stop := c.clock.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-ctx.Done():
		stop()
		return false
	}
}
