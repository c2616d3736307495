package brama

import (
	"net/http"
	"strconv"

	"github.com/wisent/singularity/internal/wire/gateway"
)

// authorize sets the credentials of one request: the HMAC headers of
// docs/brama.md#the-completion-request for a signed completion, the bearer
// key for every request in bearer mode, nothing otherwise. The secret is
// revealed only for the moment it is used. body is the completion's
// (nil for a request without one).
func (c *Client) authorize(h http.Header, agentID string, body *completionBody, signed bool) {
	switch {
	case c.auth == gateway.AuthBearer:
		key := c.apiKey.Reveal()
		h["Authorization"] = []string{"Bearer " + string(key)}
		clear(key)
	case c.auth.Brama() && signed:
		digest := body.sha256()
		unix := c.clock.Now().Unix()
		key := c.secret.Reveal()
		sig := signature(key, agentID, unix, digest)
		clear(key)
		h[headerAgentID] = []string{agentID}
		h[headerTimestamp] = []string{strconv.FormatInt(unix, 10)}
		h[headerBodySHA256] = []string{digest}
		h[headerSignature] = []string{sig}
	}
}
