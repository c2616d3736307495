package examplelas

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"testing"
)

// BenchmarkServe is the example Las's own cost per request, in-process
// over pipes (no process boundary, no Las client): the server half of
// the round trip that actors/las's BenchmarkCallRoundTrip measures whole.
func BenchmarkServe(b *testing.B) {
	for _, bc := range []struct{ name, method, params string }{
		{"echo", "tools/call", `{"name":"echo__echo","arguments":{"message":"ping"}}`},
		{"quote", "tools/call", `{"name":"finance__finance_quote","arguments":{"item":"tea"}}`},
		{"ping", "ping", `{}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- Run(context.Background(), Config{}, inR, outW); _ = outW.Close() }()
			out := bufio.NewReader(outR)
			exchange := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					b.Fatal(err)
				}
				if _, err := out.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
			exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
				b.Fatal(err)
			}
			prefix := `{"jsonrpc":"2.0","method":"` + bc.method + `","params":` + bc.params + `,"id":`
			id := 1
			b.ReportAllocs()
			for b.Loop() {
				id++
				exchange(prefix + strconv.Itoa(id) + "}")
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/req")
			_ = inW.Close()
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
