package e2e_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/bramatest"
)

// TestNarrativeLogOfOnce is docs/configuration.md#the-narrative-log seen
// from outside: a `once` whose first round calls two tools and whose
// second round replies logs exactly two tool-call lines and two
// completion lines at info, the same lines with the reply (cut at 200
// characters) at debug, and never the secret, at any level or format.
func TestNarrativeLogOfOnce(t *testing.T) {
	t.Parallel()
	reply := strings.Repeat("a long closing thought; ", 20) // 480 characters
	for _, tc := range []struct{ level, format string }{
		{"info", "text"}, {"debug", "text"}, {"debug", "json"}, {"warn", "text"},
	} {
		t.Run(tc.level+"-"+tc.format, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, `{}`)
			w.env["SINGULARITY_LOG_LEVEL"] = tc.level
			w.env["SINGULARITY_LOG_FORMAT"] = tc.format
			w.brama.Enqueue(
				bramatest.ToolCallsReply(bramatest.Usage(1000, 200),
					bramatest.Call("call-mem", "singularity_memory_remember", `{"kind":"note","text":"market opens"}`),
					bramatest.Call("call-sell", "finance__finance_sell_report", `{"item":"survey","units":3}`),
				),
				bramatest.TextReply(reply, bramatest.Usage(1500, 50)),
			)
			r := w.run("once")
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			assert.NotContains(t, r.stderr, secretValue, "the secret never reaches the log")
			assert.NotContains(t, r.stdout, secretValue)

			var completions, tools []string
			for _, line := range strings.Split(r.stderr, "\n") {
				switch {
				case strings.Contains(line, `msg=completion `), strings.Contains(line, `"msg":"completion"`):
					completions = append(completions, line)
				case strings.Contains(line, `msg="tool call"`), strings.Contains(line, `"msg":"tool call"`):
					tools = append(tools, line)
				}
			}
			if tc.level == "warn" {
				assert.Empty(t, completions, "the narrative is info")
				assert.Empty(t, tools)
				return
			}
			require.Len(t, tools, 2, "one line per tool call:\n%s", r.stderr)
			require.Len(t, completions, 2, "one line per round:\n%s", r.stderr)
			if tc.format == "json" {
				assert.Regexp(t, `"level":"INFO","msg":"tool call","being":"Ada","agent_id":"[^"]+","cycle":1,"tool":"singularity_memory_remember","status":"success","duration":`, tools[0])
				assert.Regexp(t, `"tool":"finance__finance_sell_report","status":"success"`, tools[1])
				assert.Regexp(t, `"prompt_tokens":1000,"completion_tokens":200,"cost":"0.00027 USD","finish":"tool_calls"`, completions[0])
				assert.Regexp(t, `"prompt_tokens":1500,"completion_tokens":50,"cost":"0.000255 USD","finish":"stop"`, completions[1])
				assert.Contains(t, completions[1], `"reply":"`+reply[:200]+`…"`)
				return
			}
			assert.Regexp(t, `level=INFO msg="tool call" being=Ada agent_id=\S+ cycle=1 tool=singularity_memory_remember status=success duration=\S+$`, tools[0])
			assert.Regexp(t, `tool=finance__finance_sell_report status=success duration=\S+$`, tools[1])
			assert.Regexp(t, `level=INFO msg=completion being=Ada agent_id=\S+ cycle=1 prompt_tokens=1000 completion_tokens=200 cost="0.00027 USD" finish=tool_calls duration=\S+`, completions[0])
			assert.Regexp(t, `prompt_tokens=1500 completion_tokens=50 cost="0.000255 USD" finish=stop duration=`, completions[1])
			replyRE := regexp.MustCompile(`reply="([^"]*)"`)
			if tc.level == "info" {
				assert.NotRegexp(t, replyRE, completions[1], "the reply is for debug")
				return
			}
			m := replyRE.FindStringSubmatch(completions[1])
			require.NotNil(t, m, completions[1])
			assert.Equal(t, reply[:200]+"…", m[1], "the reply, cut at 200 characters")
			assert.Contains(t, completions[0], `tool_calls=2 reply=""`)
		})
	}
}
