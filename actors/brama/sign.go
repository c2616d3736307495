package brama

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// The request headers of docs/brama.md#the-completion-request.
const (
	headerAgentID    = "X-Agent-Id"
	headerTimestamp  = "X-Agent-Timestamp"
	headerBodySHA256 = "X-Agent-Body-Sha256"
	headerSignature  = "X-Agent-Signature"
)

// signature is the lowercase hex HMAC-SHA256 under key of
// "<agent id>:<unix seconds>:<body sha256 hex>".
func signature(key []byte, agentID string, unix int64, digest string) string {
	mac := hmac.New(sha256.New, key)
	var buf [20]byte
	mac.Write([]byte(agentID))
	mac.Write([]byte{':'})
	mac.Write(strconv.AppendInt(buf[:0], unix, 10))
	mac.Write([]byte{':'})
	mac.Write([]byte(digest))
	return hex.EncodeToString(mac.Sum(nil))
}
