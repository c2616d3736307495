package simbrama

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// MaxSkew is how far a request's x-agent-timestamp may lie from the
// server's clock, in either direction, before the request is refused.
const MaxSkew = 300 * time.Second

// The signed request headers of docs/brama.md#the-completion-request.
const (
	headerAgentID    = "X-Agent-Id"
	headerTimestamp  = "X-Agent-Timestamp"
	headerBodySHA256 = "X-Agent-Body-Sha256"
	headerSignature  = "X-Agent-Signature"
)

// Reasons a request fails authentication. Their text is what the 401
// response carries as error.message.
var (
	errMissingHeaders = errors.New("missing signature headers")
	errBadTimestamp   = errors.New("invalid timestamp")
	errStale          = errors.New("timestamp outside the allowed window")
	errBodyHash       = errors.New("body hash mismatch")
	errSignature      = errors.New("invalid signature")
)

// verify checks the HMAC headers of a completion request the way Brama
// does: the body digest must match the received bytes, the timestamp must
// be within MaxSkew of now, and the signature must be the hex
// HMAC-SHA256 under secret of "<agent id>:<timestamp>:<body sha256 hex>".
// Digests are compared in constant time. It returns the agent id.
func verify(h http.Header, body, secret []byte, now time.Time) (string, error) {
	agentID, stamp := h.Get(headerAgentID), h.Get(headerTimestamp)
	digestHex, sigHex := h.Get(headerBodySHA256), h.Get(headerSignature)
	if agentID == "" || stamp == "" || digestHex == "" || sigHex == "" {
		return "", errMissingHeaders
	}
	unix, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return "", errBadTimestamp
	}
	if skew := now.Sub(time.Unix(unix, 0)); skew > MaxSkew || skew < -MaxSkew {
		return "", errStale
	}
	sum := sha256.Sum256(body)
	claimed, err := hex.DecodeString(digestHex)
	if err != nil || !hmac.Equal(claimed, sum[:]) {
		return "", errBodyHash
	}
	got, err := hex.DecodeString(sigHex)
	if err != nil || !hmac.Equal(got, Sign(secret, agentID, unix, body)) {
		return "", errSignature
	}
	return agentID, nil
}

// Sign returns the raw HMAC-SHA256 under secret of
// "<agentID>:<unix>:<hex sha256 of body>": the value whose lowercase hex
// a client sends as x-agent-signature. Tests and tools use it to sign
// requests to the simulated Brama.
func Sign(secret []byte, agentID string, unix int64, body []byte) []byte {
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(agentID + ":" + strconv.FormatInt(unix, 10) + ":" + hex.EncodeToString(sum[:])))
	return mac.Sum(nil)
}
