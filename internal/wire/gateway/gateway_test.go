package gateway

import (
	"errors"
	"testing"
)

func TestParseAuth(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Auth
		err  error
	}{
		{"", AuthHMAC, nil},
		{"hmac", AuthHMAC, nil},
		{"bearer", AuthBearer, nil},
		{"none", AuthNone, nil},
		{"HMAC", "", ErrAuth},
		{"oauth", "", ErrAuth},
		{" none", "", ErrAuth},
	} {
		got, err := ParseAuth(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ParseAuth(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if got := ErrAuth.Error(); got != "BRAMA_AUTH must be hmac, bearer or none" {
		t.Errorf("ErrAuth = %q", got)
	}
}

func TestBrama(t *testing.T) {
	for a, want := range map[Auth]bool{"": true, AuthHMAC: true, AuthBearer: false, AuthNone: false} {
		if got := a.Brama(); got != want {
			t.Errorf("%q.Brama() = %v, want %v", a, got, want)
		}
	}
}

func TestIsSelector(t *testing.T) {
	for model, want := range map[string]bool{
		"any": true, "any-vision-capable": true, "best": true, "task:code": true, "task:": true,
		"": false, "gpt-4o": false, "Any": false, "best ": false, "tasks:code": false, "auto:<cheap>": false,
	} {
		if got := IsSelector(model); got != want {
			t.Errorf("IsSelector(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestCheckModel(t *testing.T) {
	for _, tt := range []struct {
		auth  Auth
		model string
		err   error
	}{
		{"", "any", nil},
		{AuthHMAC, "task:code", nil},
		{AuthHMAC, "gpt-4o", nil},
		{AuthBearer, "gpt-4o", nil},
		{AuthBearer, "any", ErrSelectorModel},
		{AuthNone, "task:code", ErrSelectorModel},
		{AuthNone, "best", ErrSelectorModel},
	} {
		if err := tt.auth.CheckModel(tt.model); !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
			t.Errorf("%q.CheckModel(%q) = %v, want %v", tt.auth, tt.model, err, tt.err)
		}
	}
	if got := ErrSelectorModel.Error(); got != "BRAMA_MODEL must name a model when BRAMA_AUTH is not hmac" {
		t.Errorf("ErrSelectorModel = %q", got)
	}
}

func TestParseMaxTokensField(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want MaxTokensField
		err  error
	}{
		{"", FieldMaxTokens, nil},
		{"max_tokens", FieldMaxTokens, nil},
		{"max_completion_tokens", FieldMaxCompletionTokens, nil},
		{"maxTokens", "", ErrMaxTokensField},
	} {
		got, err := ParseMaxTokensField(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ParseMaxTokensField(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if got := ErrMaxTokensField.Error(); got != "BRAMA_MAX_TOKENS_FIELD must be max_tokens or max_completion_tokens" {
		t.Errorf("ErrMaxTokensField = %q", got)
	}
}
