package debug

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/debugtest"
)

// TestTreeFromElsewhere: a member that does not hold its family serves
// the tree the holder sent, decoded and screened again: the same tree
// byte for byte when it is clean, a secret the holder let through
// redacted, each being labelled with the holder's member; a holder that
// cannot be asked is a 503 with its sentence.
func TestTreeFromElsewhere(t *testing.T) {
	t.Setenv("WISENT_APP_AGENT_AUTH_SECRET", leaked)
	system, pid := spawnTree(t, debugtest.Family())
	holder := HandlerConfig{Root: system.Root, PID: pid, Deadline: testWait, Member: "m1"}
	tree, err := TreeOf(testContext(t), holder)
	require.NoError(t, err)
	sent, err := tree.MarshalJSON()
	require.NoError(t, err)

	var beings []string
	var walk func(n Node)
	walk = func(n Node) {
		if n.Kind == "being" {
			beings = append(beings, n.Name+"@"+n.Figures["member"].(string))
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree)
	assert.Equal(t, []string{"Ada@m1", "Bo@m1"}, beings, "every being is labelled with its member")

	got, err := DecodeTree(sent)
	require.NoError(t, err)
	again, err := got.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(sent), string(again), "a clean tree decodes to itself")

	// A holder that let a secret through (another build, another
	// environment) is screened by the asker.
	dirty := strings.Replace(string(sent), `"name":"Bo"`, `"name":"Bo `+leaked+`"`, 1)
	dirty = strings.Replace(dirty, `"status":"running"`, `"status":"running","note":"`+leaked+`"`, 1)
	require.Contains(t, dirty, leaked)
	got, err = DecodeTree([]byte(dirty))
	require.NoError(t, err)
	raw, err := got.MarshalJSON()
	require.NoError(t, err)
	assert.NotContains(t, string(raw), leaked)

	for _, bad := range []string{`[]`, `{"pid":"x","children":[1]}`, strings.Repeat(`{"children":[`, maxTreeDepth+2) + strings.Repeat(`]}`, maxTreeDepth+2)} {
		_, err := DecodeTree([]byte(bad))
		assert.Error(t, err, "%.40s", bad)
	}

	standby := httptest.NewServer(Handler(HandlerConfig{Elsewhere: func(context.Context) (Node, error) { return DecodeTree(sent) }}))
	t.Cleanup(standby.Close)
	resp, body := do(t, "GET", standby.URL+"/debug/actors")
	require.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, string(sent), body)
	resp, body = do(t, "GET", standby.URL+"/debug/")
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, body, "Bo")

	lost := httptest.NewServer(Handler(HandlerConfig{Elsewhere: func(context.Context) (Node, error) {
		return Node{}, errors.New("the family's holder m1 did not answer within 2s")
	}}))
	t.Cleanup(lost.Close)
	for _, path := range []string{"/debug/actors", "/debug/"} {
		resp, body = do(t, "GET", lost.URL+path)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, path)
		assert.Equal(t, "the family's holder m1 did not answer within 2s\n", body, path)
	}
}
