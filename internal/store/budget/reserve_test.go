package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wisent/singularity/test/testkit"
)

func TestBound(t *testing.T) {
	m := testkit.USD
	p := Pricing{InputPerMillion: m("0.15"), OutputPerMillion: m("0.6"), InstancePerHour: m("0.36")}
	// 10,000 bytes × 0.15/1e6 = 0.0015; 2048 × 0.6/1e6 = 0.0012288;
	// 120 s × 0.36/3600 = 0.012.
	require.Equal(t, "0.0147288", p.Bound(10_000, 2048, 120*time.Second).String())
	// Parts are rounded up to 12 places each, and a part-second counts whole.
	require.Equal(t, "0.000000000001", Pricing{InputPerMillion: m("0.0000001")}.Bound(1, 0, 0).String())
	require.Equal(t, "0.000000000002", Pricing{InputPerMillion: m("0.0000001"), OutputPerMillion: m("0.0000001")}.Bound(1, 1, 0).String())
	require.Equal(t, "0.0002", Pricing{InstancePerHour: m("0.36")}.Bound(0, 0, 1500*time.Millisecond).String())
	require.True(t, Pricing{}.Bound(1<<20, 4096, time.Hour).IsZero(), "zero prices reserve nothing")
	// The worst case is no cache hit, unless writing to the cache costs
	// more than input: then every byte is reserved at the write price.
	cheap, dear := m("0.015"), m("0.1875")
	cached := Pricing{InputPerMillion: m("0.15"), OutputPerMillion: m("0.6"), CachedInputPerMillion: &cheap}
	require.Equal(t, "0.0016038", cached.Bound(2_500, 2048, 0).String())
	cached.CacheWriteInputPerMillion = &dear
	require.Equal(t, "0.00169755", cached.Bound(2_500, 2048, 0).String())
}

func TestReserve(t *testing.T) {
	m := testkit.USD
	// Prices that make a completion cost about 0.0027 USD.
	p := Pricing{InputPerMillion: m("0.5"), OutputPerMillion: m("1"), InstancePerHour: m("0")}
	tests := []struct {
		name      string
		available string
		ok        bool
		tokens    int
		lowered   bool
	}{
		// prompt bound 2000 B × 0.5/1e6 = 0.001; full output 2048 × 1/1e6 = 0.002048.
		{"affords all", "0.004", true, 2048, false},
		{"exactly", "0.003048", true, 2048, false},
		{"lowered", "0.0020", true, 1000, true},
		{"lowered to the minimum", "0.001256", true, 256, true},
		{"below the minimum", "0.001255999999", false, 0, false},
		{"prompt alone unaffordable", "0.0009", false, 0, false},
		{"nothing", "0", false, 0, false},
		{"overdrawn", "-0.01", false, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := p.Reserve(2000, 2048, 256, 0, m(tc.available))
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			require.Equal(t, tc.tokens, r.MaxTokens)
			require.Equal(t, tc.lowered, r.Lowered)
			require.Equal(t, p.Bound(2000, tc.tokens, 0).String(), r.Bound.String())
			require.LessOrEqual(t, r.Bound.Cmp(m(tc.available)), 0, "the reservation fits")
			if r.Lowered {
				require.Positive(t, p.Bound(2000, tc.tokens+1, 0).Cmp(m(tc.available)), "one more token would not fit")
			}
		})
	}
	// With free output any positive remainder affords the full count.
	free := Pricing{InputPerMillion: m("1")}
	r, ok := free.Reserve(1000, 2048, 256, 0, m("0.001"))
	require.True(t, ok)
	require.Equal(t, 2048, r.MaxTokens)
	_, ok = free.Reserve(1000, 2048, 256, 0, m("0.000999999999"))
	require.False(t, ok)
}

func BenchmarkReserve(b *testing.B) {
	m := testkit.USD
	p := Pricing{InputPerMillion: m("0.15"), OutputPerMillion: m("0.6"), InstancePerHour: m("0.36")}
	avail := m("9.87")
	for b.Loop() {
		p.Reserve(120_000, 2048, 256, 120*time.Second, avail)
	}
}
