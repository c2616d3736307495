package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitAsksOnATerminal: on a terminal init asks for what its flags
// left out, in order, taking a default for an empty answer; without one
// it refuses the first missing value by its flag.
func TestInitAsksOnATerminal(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if err := os.WriteFile(key, []byte("sk-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ada := filepath.Join(dir, "ada")
	c := &initCmd{Dir: ada, Model: "my-model"}
	a, err := c.answers(strings.NewReader("\n5\nhttps://api.example.com/v1\n\n"+key+"\n0.15,0.6\nBe brief.\n"), &out, true)
	if err != nil {
		t.Fatal(err)
	}
	if a.baseURL != "https://api.example.com/v1" || a.model != "my-model" || a.auth != "bearer" || a.keyFile != key || a.price["input_usd_per_million"] != "0.15" || a.price["output_usd_per_million"] != "0.6" || a.priceFrom != "--prices" {
		t.Errorf("answers %+v", a)
	}
	if a.name != "Ada" || a.balance != "5" || a.prompt != "Be brief." {
		t.Errorf("name, balance, prompt: %q, %q, %q", a.name, a.balance, a.prompt)
	}
	if got := strings.Count(out.String(), ": "); got != 7 {
		t.Errorf("asked %d questions, want 7 (the model was given):\n%s", got, out.String())
	}
	for _, q := range []string{"The being's name [Ada]: ", "Its starting balance in USD [10]: ", "Its first words, the system prompt [built-in]: "} {
		if !strings.Contains(out.String(), q) {
			t.Errorf("never asked %q:\n%s", q, out.String())
		}
	}
	// Every question has a flag: with all of them, nothing is asked.
	out.Reset()
	all := &initCmd{Dir: ada, Model: "m", BaseURL: "http://u/v1", Auth: "none", Prices: "0,0", Name: "Bo", Balance: "2", Prompt: "Hi."}
	if _, err := all.answers(strings.NewReader(""), &out, true); err != nil || out.Len() != 0 {
		t.Errorf("with every flag: %v, asked %q", err, out.String())
	}
	for name, want := range map[string]string{"ada": "Ada", "my being": "MyAgent", "7up": "MyAgent", "zoë": "Zoë"} {
		if got := defaultName(filepath.Join(dir, name)); got != want {
			t.Errorf("defaultName(%q) = %q, want %q", name, got, want)
		}
	}

	for _, tc := range []struct {
		c    initCmd
		want string
	}{
		{initCmd{Dir: ".", Model: "m"}, "configuration: init: --base-url is required when stdin is not a terminal"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m"}, "configuration: init: --key-file, or --auth none for a keyless server, is required when stdin is not a terminal"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "oauth"}, "configuration: init: --auth must be bearer or none"},
		{initCmd{Dir: ".", BaseURL: "ftp://u/v1", Model: "m"}, "configuration: init: --base-url must be an http or https URL, as https://api.openai.com/v1"},
		{initCmd{Dir: ".", BaseURL: "::not a url::", Model: "m"}, "configuration: init: --base-url must be an http or https URL, as https://api.openai.com/v1"},
		{initCmd{Dir: ".", BaseURL: "https:///v1", Model: "m"}, "configuration: init: --base-url must be an http or https URL, as https://api.openai.com/v1"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", KeyFile: "/nonexistent/k"}, "secret file: /nonexistent/k: no such file or directory"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none", KeyFile: "k"}, "configuration: init: --key-file needs --auth bearer"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none", Prices: "1"}, "configuration: init: --prices must be INPUT,OUTPUT (USD per million tokens)"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none", Balance: "ten"}, "configuration: init: --starting-balance must be a decimal number of USD, as 10"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none", Balance: "-1"}, "configuration: init: --starting-balance must be a decimal number of USD, as 10"},
		{initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none"}, "configuration: init: model m is not in the price catalogue: --prices is required"},
	} {
		_, err := tc.c.answers(strings.NewReader(""), &out, false)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error %v, want %q", tc.c, err, tc.want)
		}
	}
	a, err = (&initCmd{Dir: ".", BaseURL: "http://u", Model: "m", Auth: "none", Prices: "x,1"}).answers(strings.NewReader(""), &out, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.files(); err == nil || !strings.Contains(err.Error(), "init: --prices: model \"m\": input_usd_per_million must be a decimal string") {
		t.Errorf("bad prices: %v", err)
	}
}
