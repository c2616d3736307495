package brama

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/internal/wire/chat"
	"github.com/wisent/singularity/supervision/fault"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyMain(m) }

// testSecret is the key both sides share; tests assert it never leaks.
const testSecret = "s3cret-key-never-printed"

// testWait bounds every wait in these tests.
const testWait = 10 * time.Second

func newServer(t testing.TB, mods ...func(*bramatest.Config)) *bramatest.Server {
	t.Helper()
	cfg := bramatest.Config{Secret: []byte(testSecret)}
	for _, m := range mods {
		m(&cfg)
	}
	return bramatest.Start(t, cfg)
}

func newClient(t testing.TB, baseURL string, mods ...func(*ClientConfig)) *Client {
	t.Helper()
	cfg := ClientConfig{BaseURL: baseURL, Secret: identity.NewSecret([]byte(testSecret)), Timeout: testWait}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func sampleParams() Params {
	return Params{
		AgentID: "agent-1",
		Model:   "test-model",
		Messages: []chat.Message{
			{Role: chat.RoleSystem, Content: "You are Ada."},
			{Role: chat.RoleUser, Content: "hi"},
		},
		Tools:       []chat.Tool{chat.NewTool("echo", "Echo text back.", json.RawMessage(`{"type":"object"}`))},
		MaxTokens:   2048,
		Temperature: 0.2,
	}
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}

// requireBramaError checks an error's exact text, class and kind, and
// that the secret is nowhere in it.
func requireBramaError(t testing.TB, err error, kind fault.Kind, text string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, text, err.Error())
	requireBramaKind(t, err, kind)
}

func requireBramaKind(t testing.TB, err error, kind fault.Kind) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, fault.ClassBrama, fault.ClassOf(err))
	require.Equal(t, kind, fault.KindOf(err), "kind of %q", err)
	require.Equal(t, 3, fault.ExitCode(err))
	require.NotContains(t, err.Error(), testSecret)
	for e := err; e != nil; e = errors.Unwrap(e) {
		require.NotContains(t, e.Error(), testSecret)
	}
}

func quietSystem() *actor.ActorSystem {
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
}

func hasPrefix(s, prefix string) bool { return strings.HasPrefix(s, prefix) }

func configSecret(s string) identity.Secret { return identity.NewSecret([]byte(s)) }

// bodyDigest is the lowercase hex SHA-256 of a request body, as the
// client signs it.
func bodyDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// encode is the whole completion body for p, as the client sends it.
func (c *Client) encode(p Params) ([]byte, error) {
	body, err := c.body(p)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if _, err := body.reader().WriteTo(&out); err != nil {
		return nil, err
	}
	if out.Len() != body.size {
		return nil, fmt.Errorf("the body is %d bytes, its size says %d", out.Len(), body.size)
	}
	return out.Bytes(), nil
}

// appendMessages appends the messages array to out, msgs and then the
// encoded ones, each encoded on its own (not as the client writes them).
func appendMessages(out []byte, msgs []chat.Message, encoded state.Encoded) ([]byte, error) {
	all := make([]json.RawMessage, 0, len(msgs)+len(encoded))
	for _, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		all = append(all, data)
	}
	for _, p := range encoded {
		all = append(all, p.Unpack())
	}
	data, err := json.Marshal(all)
	return append(out, data...), err
}
