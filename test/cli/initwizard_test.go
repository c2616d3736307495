package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/test/bramatest"
	"github.com/wisent/singularity/test/testkit"
)

// openPTY opens a pseudo-terminal: the controller the test writes the
// answers to, and the terminal the command reads them from.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	controller, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = controller.Close() })
	fd := int(controller.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = terminal.Close() })
	return controller, terminal
}

// initOnTerminal runs init with stdin on a terminal that holds answers,
// and returns what it printed.
func initOnTerminal(t *testing.T, answers string, args ...string) result {
	t.Helper()
	controller, terminal := openPTY(t)
	_, err := controller.WriteString(answers)
	require.NoError(t, err)
	cmd := exec.Command(testkit.Singularity(t), append([]string{"init"}, args...)...)
	cmd.Env = testkit.Environ(map[string]string{"PATH": os.Getenv("PATH")})
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = terminal, &stdout, &stderr
	code := testkit.ExitCode(t, cmd.Run())
	return result{stdout.String(), stderr.String(), code}
}

// TestInitWizard: on a terminal, init asks for the name, the starting
// balance, the provider, the model, the authentication, the prices (of
// a model the catalogue does not know) and the being's first words,
// each with its default; the being it wrote
// is named, funded and prompted as answered. With every flag it asks
// nothing.
func TestInitWizard(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "ada")
	srv := bramatest.Start(t, bramatest.Config{Auth: "none", Models: []string{"m"}})
	srv.Enqueue(bramatest.TextReply("hello", bramatest.Usage(10, 1)))
	r := initOnTerminal(t, "\n3\n"+srv.URL+"\nm\nnone\n0,0\nYou keep careful notes.\n", dir)
	require.Equal(t, 0, r.code, r.stderr)
	for _, q := range []string{"The being's name [Ada]: ", "Its starting balance in USD [10]: ", "The model id: ", "Authentication, bearer or none [bearer]: ", "Its first words, the system prompt [built-in]: "} {
		assert.Contains(t, r.stdout, q)
	}
	text, err := os.ReadFile(filepath.Join(dir, "singularity.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(text), "agent-name = \"Ada\"\n")
	assert.Contains(t, string(text), "starting-balance-usd = \"3\"\n")
	assert.Contains(t, string(text), "system-prompt = \"You keep careful notes.\"\n")
	assert.Contains(t, string(text), "\nfamily-tools = true\n", "a being made by init has the family tools")

	// The being it describes (without the example servers, which npx
	// would fetch): its name, balance and first words are the answers.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "servers.json"), []byte(`{"mcpServers": {}}`), 0o600))
	once := runIn(t, dir, map[string]string{"PATH": os.Getenv("PATH")}, "once")
	require.Equal(t, 0, once.code, once.stderr)
	st, err := state.Load(filepath.Join(dir, "state"))
	require.NoError(t, err)
	assert.Equal(t, "Ada", st.Identity.Name)
	assert.Equal(t, "3", st.Budget.Starting.String())
	reqs := srv.Completions()
	require.NotEmpty(t, reqs)
	first := reqs[0].Completion.Messages[0]
	assert.Equal(t, "system", first.Role)
	assert.True(t, strings.HasPrefix(first.Content, "You keep careful notes."), first.Content)

	all := initOnTerminal(t, "", filepath.Join(t.TempDir(), "bo"), "--name", "Bo", "--starting-balance", "2", "--base-url", srv.URL,
		"--model", "m", "--auth", "none", "--prices", "0,0", "--prompt", "Hi.")
	require.Equal(t, 0, all.code, all.stderr)
	assert.NotContains(t, all.stdout, "]: ", "with every flag nothing is asked")
	assert.True(t, strings.HasPrefix(all.stdout, "wrote "), all.stdout)
}
