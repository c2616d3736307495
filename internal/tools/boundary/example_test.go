package boundary_test

import (
	"encoding/json"
	"fmt"

	"github.com/wisent/singularity/internal/tools/boundary"
	"github.com/wisent/singularity/internal/tools/outcome"
)

// The output boundary of one being screens every tool result before the
// model sees it: known secrets are redacted and paths inside the
// workspace come back relative. A result that still breaks a rule, here
// a path outside the workspace, is withheld whole; the call keeps its
// real status, and the reason goes to the log only.
func ExampleScreen_Apply() {
	screen := boundary.Screen{
		Workspace: "/srv/ada/workspace",
		Secrets:   boundary.NewSecrets([]byte("s3cr3t-most-token")),
	}
	for _, result := range []string{
		`{"saved":"/srv/ada/workspace/notes/a.txt"}`,
		`{"echo":"the token is s3cr3t-most-token"}`,
		`{"saved":"/etc/passwd"}`,
	} {
		screened, reason := screen.Apply(outcome.Succeeded(json.RawMessage(result)))
		fmt.Println(screened.Envelope())
		if reason != "" {
			fmt.Println("  log:", reason)
		}
	}
	// Output:
	// {"chat_id":null,"content":{"saved":"notes/a.txt"},"error_code":null,"message_id":null,"status":"success"}
	// {"chat_id":null,"content":{"echo":"the token is [redacted]"},"error_code":null,"message_id":null,"status":"success"}
	// {"status":"success","error_code":"sensitive_output_rejected"}
	//   log: string contains a raw local path
}

// Check is the rule set alone, without a workspace or secrets: keys that
// name a credential and private key blocks are refused; bracket text that
// is not JSON is plain text.
func ExampleCheck() {
	for _, result := range []string{
		`{"github_token":"x"}`,
		`{"token_count":3}`,
		`"-----BEGIN OPENSSH PRIVATE KEY-----"`,
		`"[FILE] a.txt"`,
		`{"see":"https://example.com/a"}`,
	} {
		fmt.Printf("%-40s %v\n", result, boundary.Check(json.RawMessage(result)))
	}
	// Output:
	// {"github_token":"x"}                     forbidden key: a key ending in "token"
	// {"token_count":3}                        <nil>
	// "-----BEGIN OPENSSH PRIVATE KEY-----"    string contains a private key block
	// "[FILE] a.txt"                           <nil>
	// {"see":"https://example.com/a"}          <nil>
}
