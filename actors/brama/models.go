package brama

import (
	"context"
	"slices"
	"strings"
)

// IsSelector reports whether model names a choice Brama makes rather than an
// exact model id (docs/brama.md#model-selection): "any",
// "any-vision-capable", "best", or a "task:" prefix. Selectors are accepted
// without consulting /v1/models.
func IsSelector(model string) bool {
	switch model {
	case "any", "any-vision-capable", "best":
		return true
	}
	return strings.HasPrefix(model, "task:")
}

// Advertised reports whether model is a selector or one of ids, the list
// /v1/models returned. The comparison is exact.
func Advertised(ids []string, model string) bool {
	return IsSelector(model) || slices.Contains(ids, model)
}

// Available reports whether model may be used now: a selector always may
// with Brama; an exact id only when the model list currently holds it. Any
// other gateway knows no selectors (docs/brama.md#model-selection). The
// error is the classified failure to ask the gateway.
func (c *Client) Available(ctx context.Context, model string) (bool, error) {
	if c.auth.Brama() && IsSelector(model) {
		return true, nil
	}
	ids, err := c.Models(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(ids, model), nil
}
