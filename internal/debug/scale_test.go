package debug

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/internal/debug/describe"
	"github.com/wisent/singularity/test/debugtest"
)

// wideFamily is a family of n beings under one root, each with its
// ledger, described with the figures a being and a ledger report
// (actors/being/describe.go), the shape of a family of thousands.
func wideFamily(n int) debugtest.Spec {
	root := debugtest.Spec{ID: "family", Description: describe.Description{Kind: "family", Name: "family", Status: "running"}}
	for i := range n {
		balance := fmt.Sprintf("%d.%06d", 10+i%7, i)
		root.Children = append(root.Children, debugtest.Spec{
			ID: fmt.Sprintf("being-%d", i),
			Description: describe.Description{Kind: "being", Name: fmt.Sprintf("S%d", i), Status: "running", Figures: map[string]any{
				"id": fmt.Sprintf("agent-%08d", i), "cycle": uint64(40 + i%60), "balance": balance,
				"starting": "20", "spent": "9.5", "earned": "0", "granted": "0", "remaining": balance,
				"current_model": "test-model", "last_action": "singularity_memory_recall:success",
				"tools": 9, "restarts": 0, "last_failure": "", "waiting_for": "model",
			}},
			Children: []debugtest.Spec{{
				ID: "ledger",
				Description: describe.Description{Kind: "ledger", Name: "ledger", Status: "running", Figures: map[string]any{
					"remaining": balance, "spent": "9.5", "earned": "0",
				}},
			}},
		})
	}
	return root
}

// BenchmarkServeActors is one GET /debug/actors over a family of 10,000
// beings (20,001 actors): the walk, the redaction, the family ledger and
// the JSON body. docs/debug.md#routes promises the whole tree within 2 s
// at that size.
func BenchmarkServeActors(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("beings=%d", n), func(b *testing.B) {
			srv := newTestServer(b, wideFamily(n), testWait)
			b.ResetTimer()
			for b.Loop() {
				resp, body := do(b, http.MethodGet, srv.URL+"/debug/actors")
				require.Equal(b, http.StatusOK, resp.StatusCode)
				require.NotContains(b, body, StatusUnresponsive)
			}
		})
	}
}
