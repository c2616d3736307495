package strictjson

import "testing"

func TestDecode(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"a":1}`, true},
		{` [1, 2] `, true},
		{`{"a":1} {"b":2}`, false},
		{`{"a":1} x`, false},
		{`{"a":`, false},
	}
	for _, tt := range tests {
		var v any
		if err := Decode([]byte(tt.in), &v); (err == nil) != tt.ok {
			t.Errorf("Decode(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

func TestRepeatedKey(t *testing.T) {
	tests := []struct {
		in   string
		name string
		ok   bool
	}{
		{`{"a":1,"b":{"a":2}}`, "", false},
		{`{"a":1,"b":2,"a":3}`, "a", true},
		{`{}`, "", false},
		{`[1]`, "", false},
	}
	for _, tt := range tests {
		name, ok := RepeatedKey([]byte(tt.in))
		if name != tt.name || ok != tt.ok {
			t.Errorf("RepeatedKey(%q) = %q, %v; want %q, %v", tt.in, name, ok, tt.name, tt.ok)
		}
	}
}
