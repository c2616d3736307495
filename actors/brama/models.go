package brama

import (
	"context"
	"errors"
	"slices"

	"github.com/wisent/singularity/internal/wire/gateway"
)

// ErrNoModelList marks the answer of a gateway that has no model list:
// its list's URL answered 404. Such a gateway may still serve
// completions; only what needs the list (doctor's model check, a survival
// tier's model, a switch of model) cannot be done
// (docs/brama.md#other-openai-compatible-gateways).
var ErrNoModelList = errors.New("the gateway has no model list")

// Available reports whether model may be used now: a selector always may
// with Brama; an exact id only when the model list currently holds it. Any
// other gateway knows no selectors (docs/brama.md#model-selection). The
// error is the classified failure to ask the gateway.
func (c *Client) Available(ctx context.Context, model string) (bool, error) {
	if c.auth.Brama() && gateway.IsSelector(model) {
		return true, nil
	}
	ids, err := c.Models(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(ids, model), nil
}
