// Package strictjson decodes the operator's JSON files strictly: one
// value and nothing after it, and objects whose member names are not
// repeated (encoding/json keeps the last of a repeated name silently).
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Decode decodes the one JSON value of data into v and refuses anything
// after it.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the value")
	}
	return nil
}

// RepeatedKey reports the first member name that the JSON object data,
// already known to decode, repeats.
func RepeatedKey(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return name, true
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
