package simbrama

import (
	"slices"
	"sync"
)

// The prompt cache's rule (docs/demo.md#the-prompt-cache), after OpenAI's:
// a prompt is cached from its start, in whole blocks, once the common
// prefix reaches the minimum.
const (
	// BytesPerToken is the simulated tokenizer: a token is four bytes of
	// the messages' serialization, the last one rounded up.
	BytesPerToken = 4
	// CacheMinTokens is the shortest prefix that is cached at all.
	CacheMinTokens = 1024
	// CacheBlockTokens is the step of a cached prefix past the minimum.
	CacheBlockTokens = 128
	// CacheDepth is how many of a caller's latest prompts a new one is
	// compared with.
	CacheDepth = 16
)

// Tokens is the token count of a serialization of n bytes: ⌈n / 4⌉.
func Tokens(n int) uint64 { return (uint64(max(n, 0)) + BytesPerToken - 1) / BytesPerToken }

// CachedTokens is how many tokens of a prompt whose longest common prefix
// with an earlier one is common bytes long the cache serves: the whole
// tokens of that prefix, none below CacheMinTokens, and past it only
// whole blocks of CacheBlockTokens.
func CachedTokens(common int) uint64 {
	t := uint64(max(common, 0)) / BytesPerToken
	if t < CacheMinTokens {
		return 0
	}
	return CacheMinTokens + (t-CacheMinTokens)/CacheBlockTokens*CacheBlockTokens
}

// Cache is the simulated provider's prompt cache. It keeps each caller's
// last CacheDepth prompts (the serialization of their messages) and
// answers how much of a new prompt is a prefix it has seen. It is safe for
// concurrent use; the zero value is not: use NewCache.
type Cache struct {
	mu     sync.Mutex
	recent map[string][][]byte // by caller, oldest first
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{recent: map[string][][]byte{}} }

// Serve compares prompt with the caller's last CacheDepth prompts and
// then keeps a copy of it among them. It returns the prompt's tokens and
// how many of them are cached (CachedTokens of the longest common prefix
// with any of those prompts): never more than the prompt's tokens.
func (c *Cache) Serve(caller string, prompt []byte) (tokens, cached uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	longest := 0
	for _, earlier := range c.recent[caller] {
		longest = max(longest, commonPrefix(earlier, prompt))
	}
	kept := append(c.recent[caller], append([]byte(nil), prompt...))
	if len(kept) > CacheDepth {
		kept = slices.Delete(kept, 0, len(kept)-CacheDepth)
	}
	c.recent[caller] = kept
	return Tokens(len(prompt)), CachedTokens(longest)
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
