package examplelas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Surfaces the example Las offers.
const (
	SurfaceFinance  = "finance"
	SurfaceEcho     = "echo"
	SurfaceSkarbiec = "skarbiec"
	SurfaceChaos    = "chaos"
)

// UnitPriceCents is the simulated price of one unit sold, in US cents.
const UnitPriceCents = 5

type (
	itemArgs struct {
		Item string `json:"item" jsonschema:"what to price or sell"`
	}
	sellArgs struct {
		Item  string `json:"item" jsonschema:"what was sold"`
		Units int    `json:"units,omitempty" jsonschema:"how many units (default 1)"`
	}
	quote struct {
		Item      string `json:"item"`
		PriceUSD  string `json:"price_usd"`
		Simulated bool   `json:"simulated"`
	}
	saleReport struct {
		Item       string `json:"item"`
		Units      int    `json:"units"`
		RevenueUSD string `json:"revenue_usd"`
		Simulated  bool   `json:"simulated"`
	}
	salesSummary struct {
		Sales     int    `json:"sales"`
		TotalUSD  string `json:"total_usd"`
		Simulated bool   `json:"simulated"`
	}
	echoArgs struct {
		Message string `json:"message" jsonschema:"text to echo back"`
	}
	echoResult struct {
		Message string `json:"message"`
	}
	statusResult struct {
		Status    string `json:"status"`
		AgentID   string `json:"agent_id"`
		Simulated bool   `json:"simulated"`
	}
	keyArgs struct {
		Key string `json:"key,omitempty" jsonschema:"a label recorded with the delivery"`
	}
	slowArgs struct {
		Key string `json:"key,omitempty" jsonschema:"a label recorded with the delivery"`
		Ms  int    `json:"ms,omitempty" jsonschema:"milliseconds to wait"`
	}
	bigArgs struct {
		Bytes int `json:"bytes" jsonschema:"size of the text to return"`
	}
	noArgs    struct{}
	envResult struct {
		Env []string `json:"env"`
	}
	okResult struct {
		OK  bool   `json:"ok"`
		Key string `json:"key,omitempty"`
	}
	secretResult struct {
		APIKey string `json:"api_key"`
		Path   string `json:"path"`
	}
)

// usd formats a cent amount as a plain decimal string ("0.05").
func usd(cents int) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }

func (s *server) addTools() {
	if s.offers(SurfaceFinance) {
		s.addFinance()
	}
	if s.offers(SurfaceEcho) {
		// Echo is the hot path of the round-trip benchmark: a plain
		// handler, without the typed layer's schema validation and
		// structured output.
		s.mcp.AddTool(&mcp.Tool{
			Name:        "echo__echo",
			Description: "Echo a message back unchanged",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"text to echo back"}},"required":["message"]}`),
		}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a echoArgs
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "arguments must be an object with a message"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil
		})
	}
	if s.offers(SurfaceSkarbiec) {
		mcp.AddTool(s.mcp, &mcp.Tool{Name: "skarbiec__status", Description: "Report the simulated treasury status for this agent"},
			func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, statusResult, error) {
				return nil, statusResult{Status: "ok", AgentID: os.Getenv("SKARBIEC_MCP_AGENT_ID"), Simulated: true}, nil
			})
	}
	if s.offers(SurfaceChaos) {
		s.addChaos()
	}
}

func (s *server) addFinance() {
	var mu sync.Mutex
	sales, totalCents := 0, 0
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "finance__finance_quote", Description: "Quote the simulated unit price of an item in USD"},
		func(_ context.Context, _ *mcp.CallToolRequest, a itemArgs) (*mcp.CallToolResult, quote, error) {
			return nil, quote{Item: a.Item, PriceUSD: usd(UnitPriceCents), Simulated: true}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "finance__finance_sell_report", Description: "Sell units of an item in the simulated market and report the revenue earned"},
		func(_ context.Context, _ *mcp.CallToolRequest, a sellArgs) (*mcp.CallToolResult, saleReport, error) {
			units := a.Units
			if units <= 0 {
				units = 1
			}
			if units > 1000 {
				return nil, saleReport{}, errors.New("at most 1000 units per sale")
			}
			mu.Lock()
			sales++
			totalCents += units * UnitPriceCents
			mu.Unlock()
			return nil, saleReport{Item: a.Item, Units: units, RevenueUSD: usd(units * UnitPriceCents), Simulated: true}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "finance__finance_sales_summary", Description: "Summarize the simulated sales made so far by this Las"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, salesSummary, error) {
			mu.Lock()
			defer mu.Unlock()
			return nil, salesSummary{Sales: sales, TotalUSD: usd(totalCents), Simulated: true}, nil
		})
}

// chaosIDs are the ids of the requests chaos__noise sends to the client;
// their answers are recorded instead of reaching the SDK.
var chaosIDs = []string{`"chaos-1"`, `1`}

func (s *server) addChaos() {
	delivered := func(tool, key string) { s.record("call " + tool + " " + key) }

	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__env", Description: "Report this process's environment"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, envResult, error) {
			return nil, envResult{Env: environment()}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__count", Description: "Record a delivery and succeed"},
		func(_ context.Context, _ *mcp.CallToolRequest, a keyArgs) (*mcp.CallToolResult, okResult, error) {
			delivered("chaos__count", a.Key)
			return nil, okResult{OK: true, Key: a.Key}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__exit", Description: "Record a delivery, then exit without answering"},
		func(_ context.Context, _ *mcp.CallToolRequest, a keyArgs) (*mcp.CallToolResult, okResult, error) {
			delivered("chaos__exit", a.Key)
			os.Exit(3)
			return nil, okResult{}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__freeze", Description: "Record a delivery, then stop writing anything at all"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a keyArgs) (*mcp.CallToolResult, okResult, error) {
			delivered("chaos__freeze", a.Key)
			s.out.mu.Lock() // never released: the whole server goes silent
			<-make(chan struct{})
			return nil, okResult{}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__slow", Description: "Record a delivery, then wait ms milliseconds or until cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, a slowArgs) (*mcp.CallToolResult, okResult, error) {
			delivered("chaos__slow", a.Key)
			if !sleepFor(ctx, a.Ms) {
				s.record("aborted chaos__slow " + a.Key)
				return nil, okResult{}, ctx.Err()
			}
			return nil, okResult{OK: true, Key: a.Key}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__fail", Description: "Answer with a tool error"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, okResult, error) {
			return nil, okResult{}, errors.New("tool failed on purpose")
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__secret", Description: "Return secret-shaped output"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, secretResult, error) {
			return nil, secretResult{APIKey: "sk-example-not-a-real-key", Path: "/etc/example/credentials"}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__big", Description: "Return a text of the given size"},
		func(_ context.Context, _ *mcp.CallToolRequest, a bigArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", max(a.Bytes, 0))}}}, nil, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__noise", Description: "Write junk, notifications and requests to the client before answering"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, okResult, error) {
			s.out.raw(
				"",
				"this line is not JSON",
				`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"noise"}}`,
				`{"jsonrpc":"2.0","id":987654,"result":{"stray":true}}`,
				`{"jsonrpc":"2.0","id":"chaos-1","method":"roots/list"}`,
				`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`,
				"   ",
			)
			return nil, okResult{OK: true}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__list_bad", Description: "Announce list_changed and answer the next tools/list with a tool named against the rules"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, okResult, error) {
			s.badList.Store(true)
			s.out.raw(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			return nil, okResult{OK: true}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__list_burst", Description: "Announce list_changed three times in a row, changing nothing"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, okResult, error) {
			changed := `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
			s.out.raw(changed, changed, changed)
			return nil, okResult{OK: true}, nil
		})
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "chaos__list_changed", Description: "Add the tool echo__echo_again, announcing list_changed"},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, okResult, error) {
			mcp.AddTool(s.mcp, &mcp.Tool{Name: "echo__echo_again", Description: "Echo a message back, again"},
				func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, echoResult, error) {
					return nil, echoResult{Message: a.Message}, nil
				})
			return nil, okResult{OK: true}, nil
		})
}
