package mcpstdio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/wisent/singularity/test/testkit"
)

// fakeServerEnv, set in the environment of this test binary, makes it
// the fake server of fakeServer instead of running the tests.
const fakeServerEnv = "MCPSTDIO_FAKE_SERVER"

// TestMain fails the run on a leaked goroutine; run with fakeServerEnv
// set, the binary is a fake server instead.
func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) != "" {
		fakeServer()
		os.Exit(0)
	}
	testkit.VerifyMain(m)
}

// fakeServer answers every request on stdin with an empty result, one
// line each, until stdin ends: enough of a server for ping.
func fakeServer() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 || msg.Method == "" {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", msg.ID)
	}
}

// fakeServerConfig starts this test binary as the fake server.
func fakeServerConfig(t testing.TB) Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Path: self,
		Env:  []string{fakeServerEnv + "=1"},
	}
}
