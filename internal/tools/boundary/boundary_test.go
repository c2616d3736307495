package boundary

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/tools/outcome"
)

// nest wraps inner in n arrays.
func nest(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

// quote returns s as a JSON string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var checkCases = []struct {
	name   string
	result string
	want   error // nil: accepted
}{
	// Accepted shapes.
	{"empty is null", "", nil},
	{"null", "null", nil},
	{"plain object", `{"memory_id":"0b6f2f3e-3a0c-4f3e-9d55-2f6a1c0e8b11"}`, nil},
	{"numbers and bools", `{"a":1.5e300,"b":true,"c":null,"d":-0}`, nil},
	{"top-level string", `"hello world"`, nil},
	{"relative path", `{"path":"notes/today.md"}`, nil},
	{"slash inside a word", `{"text":"either/or and a/b"}`, nil},
	{"url is not a local path", `{"u":"https://example.com/a/b"}`, nil},
	{"token word in value", `{"note":"my token is gone"}`, nil},
	{"key containing word without underscore", `{"tokens":1,"mytoken":2,"passwords_count":3}`, nil},
	{"key word at start", `{"token_count":1,"secret_santa":2}`, nil},
	{"public key block", quote("-----BEGIN PUBLIC KEY-----"), nil},
	{"RSA private key header is not listed", quote("-----BEGIN RSA PRIVATE KEY-----"), nil},

	// Size.
	{"exactly 64 KiB", quote(strings.Repeat("a", MaxBytes-2)), nil},
	{"one byte over 64 KiB", quote(strings.Repeat("a", MaxBytes-1)), ErrTooLarge},

	// Depth.
	{"depth 8 arrays", nest(8, "1"), nil},
	{"depth 9 arrays", nest(9, ""), ErrTooDeep},
	{"depth 9 mixed", `{"a":` + nest(7, `{"b":1}`) + `}`, ErrTooDeep},
	{"depth 8 mixed", `{"a":` + nest(6, `{"b":1}`) + `}`, nil},
	{"embedded JSON counts one level", nest(6, quote("[]")), nil},
	{"embedded JSON one level too deep", nest(7, quote("[]")), ErrTooDeep},
	{"top-level string holding depth 7", quote(nest(7, "")), nil},
	{"top-level string holding depth 8", quote(nest(8, "")), ErrTooDeep},

	// Forbidden keys.
	{"key secret", `{"secret":"x"}`, ErrForbiddenKey},
	{"key password nested", `{"a":[{"b":{"password":1}}]}`, ErrForbiddenKey},
	{"key passwd", `{"passwd":null}`, ErrForbiddenKey},
	{"key token", `{"token":1}`, ErrForbiddenKey},
	{"key access_token", `{"access_token":1}`, ErrForbiddenKey},
	{"key refresh-token", `{"refresh-token":1}`, ErrForbiddenKey},
	{"key Api Key", `{"Api Key":1}`, ErrForbiddenKey},
	{"key AUTHORIZATION", `{"AUTHORIZATION":1}`, ErrForbiddenKey},
	{"key session_cookie", `{"session_cookie":1}`, ErrForbiddenKey},
	{"key private-key", `{"private-key":1}`, ErrForbiddenKey},
	{"key privateKey", `{"privateKey":1}`, ErrForbiddenKey},
	{"key ssh_privatekey", `{"ssh_privatekey":1}`, ErrForbiddenKey},
	{"key credential_path", `{"credential_path":1}`, ErrForbiddenKey},
	{"key my secret path", `{"my secret path":1}`, ErrForbiddenKey},
	{"key tls key-path", `{"tls key-path":1}`, ErrForbiddenKey},
	{"key github_token", `{"github_token":1}`, ErrForbiddenKey},
	{"key with Kelvin sign", `{"to\u212aen":1}`, ErrForbiddenKey},
	{"duplicate key hides a forbidden one", `{"a":1,"token":"x","token":"y"}`, ErrForbiddenKey},
	{"forbidden key in embedded JSON", `{"raw":"{\"api_key\":\"k\"}"}`, ErrForbiddenKey},

	// NUL.
	{"NUL in value", `{"a":"x\u0000y"}`, ErrNUL},
	{"NUL in key", `{"a\u0000":1}`, ErrNUL},

	// Private keys.
	{"private key block", quote("-----BEGIN PRIVATE KEY-----\nMIIE"), ErrPrivateKey},
	{"private key lower case", `{"k":"x -----begin private key----- y"}`, ErrPrivateKey},
	{"openssh private key", quote("-----BEGIN OPENSSH PRIVATE KEY-----"), ErrPrivateKey},
	{"openssh with long s", quote("-----BEGIN OPEN\u017f\u017fH PRIVATE KEY-----"), ErrPrivateKey},
	{"escaped dashes", `"\u002d\u002d\u002d\u002d\u002dBEGIN PRIVATE KEY-----"`, ErrPrivateKey},

	// Raw local paths.
	{"absolute path", `{"a":"/etc/passwd"}`, ErrLocalPath},
	{"path in a sentence", `{"a":"see /home/ada/notes.txt for details"}`, ErrLocalPath},
	{"path in quotes and parens", `{"a":"(\"/tmp/x\"),"}`, ErrLocalPath},
	{"path after colon", `{"a":"error: :/var/lib"}`, ErrLocalPath},
	{"bare slash", `{"a":"/"}`, ErrLocalPath},
	{"file url", `{"a":"file:///etc/hosts"}`, ErrLocalPath},
	{"FILE url", `{"a":"FILE://host/x"}`, ErrLocalPath},
	{"escaped slash", `{"a":"\/etc"}`, ErrLocalPath},
	{"path after tab", "{\"a\":\"x\\t/etc\"}", ErrLocalPath},
	{"path as key", `{"/etc/passwd":1}`, ErrLocalPath},
	{"path in array", `["ok","[/srv]"]`, ErrLocalPath},

	// Embedded JSON.
	{"embedded object", `{"a":"{\"b\":1}"}`, nil},
	{"embedded array with spaces", `{"a":"  [1, 2]  "}`, nil},
	{"text starting with a brace is plain text", `{"a":"{not json"}`, nil},
	{"text after a document is plain text", `{"a":"[1] x"}`, nil},
	{"a listing line is plain text", `{"a":"[FILE] a.txt\n[DIR] notes"}`, nil},
	{"plain bracket text is still screened", `{"a":"[FILE] /etc/passwd"}`, ErrLocalPath},
	{"plain bracket text keeps the NUL rule", `{"a":"{x\u0000"}`, ErrNUL},
	{"embedded path", `{"a":"{\"p\":\"/etc\"}"}`, ErrLocalPath},
	{"doubly embedded", `{"a":"{\"b\":\"{\\\"token\\\":1}\"}"}`, ErrForbiddenKey},

	// Malformed results.
	{"not JSON", `{"a":`, ErrMalformed},
	{"trailing value", `{} {}`, ErrMalformed},
	{"invalid UTF-8", "\"\xff\"", ErrMalformed},
}

func TestCheck(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(json.RawMessage(tc.result))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
		})
	}
}

func TestReasonNeverQuotesTheValue(t *testing.T) {
	for _, r := range []string{
		`{"a":"/home/ada/secret-plans"}`,
		`{"a":"-----BEGIN PRIVATE KEY-----MIIEsecretbytes"}`,
		`{"a":"{\"secretbytes\":\"/srv\"}"}`,
	} {
		err := Check(json.RawMessage(r))
		require.Error(t, err)
		require.NotContains(t, err.Error(), "ada")
		require.NotContains(t, err.Error(), "secretbytes")
	}
}

func TestApply(t *testing.T) {
	ok := outcome.Succeeded(json.RawMessage(`{"memory_id":"m1"}`))
	got, reason := Screen{}.Apply(ok)
	require.Empty(t, reason)
	require.Equal(t, ok, got)

	bad := outcome.Succeeded(json.RawMessage(`{"path":"/etc/shadow","content":"x"}`))
	bad.ChatID = "c1"
	got, reason = Screen{}.Apply(bad)
	require.NotEmpty(t, reason)
	require.Equal(t, outcome.Success, got.Status, "the replacement keeps the call's real status")
	require.Equal(t, "sensitive_output_rejected", got.ErrorCode)
	require.Empty(t, got.ChatID)
	require.Equal(t, `{"status":"success","error_code":"sensitive_output_rejected"}`, got.Envelope())

	// A failure's message is screened too.
	got, _ = Screen{}.Apply(outcome.Failure("remote_tool", "cannot open /var/db"))
	require.True(t, got.Rejected)

	// Most ids are screened as strings.
	idOutcome := outcome.Succeeded(json.RawMessage(`{"id":"x"}`))
	idOutcome.MessageID = "/tmp/id"
	got, _ = Screen{}.Apply(idOutcome)
	require.True(t, got.Rejected)

	// The replacement passes through unchanged.
	again, reason := Screen{}.Apply(got)
	require.Empty(t, reason)
	require.Equal(t, got, again)
}

func BenchmarkCheck(b *testing.B) {
	doc := json.RawMessage(`{"memories":[` + strings.Repeat(`{"id":"0b6f2f3e-3a0c-4f3e-9d55-2f6a1c0e8b11","kind":"lead","text":"Bakery owner wants a weekly price survey, see notes.","created_at":"2026-08-24T22:05:13.100000Z"},`, 49) +
		`{"id":"x","kind":"k","text":"t","created_at":"2026-08-24T22:05:13.100000Z"}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := Check(doc); err != nil {
			b.Fatal(err)
		}
	}
}
