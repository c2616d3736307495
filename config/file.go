package config

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// File is a configuration file (--config, SINGULARITY_CONFIG;
// docs/configuration.md#the-configuration-file): TOML whose keys are the
// long names of the command line's flags, at the top level or in tables
// that only group them (a table's name is not part of the key). A flag's
// value comes from the command line first, then from its environment
// variable, then from the file, then from its default.
//
// The file names secret files, never secrets: the secret options are
// all paths (BRAMA_API_KEY_FILE, …), and no key holds a secret itself.
//
// A relative path in a path-valued key (IsPathKey) is taken relative to
// the file's own directory, so a configuration works from wherever the
// command runs.
type File struct {
	// Path is the file as named.
	Path string
	// Values maps a key to its value as text, as it would be written
	// after --key= on the command line (a boolean as true or false, a
	// list joined by commas).
	Values map[string]string
	// Lines maps a key to the line that sets it (1-based), for the
	// refusal of its value.
	Lines map[string]int
}

// Where is the place of key in the file, "<path>:<line>" (the path alone
// when the line is unknown).
func (f *File) Where(key string) string {
	if n, ok := f.Lines[key]; ok {
		return fmt.Sprintf("%s:%d", f.Path, n)
	}
	return f.Path
}

// ReadFile reads and parses the configuration file at path. Every key
// must be one of known (the flags' long names); the first that is not is
// refused with "configuration: <path>: unknown key <key>". A file that
// cannot be read, is not a regular file, is larger than
// MaxConfigFileBytes, is not TOML, names a key twice (within tables too),
// holds a value that is no scalar or list of scalars, or writes an amount
// (IsAmountKey) as a TOML float is refused with a sentence naming the
// file.
func ReadFile(path string, known map[string]bool) (*File, error) {
	data, err := readFile(path, MaxConfigFileBytes)
	if err != nil {
		return nil, configError("%s: %w", path, err)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, configError("%s: %s", path, tomlReason(err))
	}
	f := &File{Path: path, Values: map[string]string{}, Lines: map[string]int{}}
	if err := f.collect("", doc, known); err != nil {
		return nil, err
	}
	for n, line := range strings.Split(string(data), "\n") {
		if m := keyLine.FindStringSubmatch(line); m != nil {
			if _, ok := f.Values[m[1]]; ok {
				f.Lines[m[1]] = n + 1
			}
		}
	}
	return f, nil
}

// collect adds the keys of table (named prefix, "" for the top level) in
// key order.
func (f *File) collect(prefix string, table map[string]any, known map[string]bool) error {
	for _, key := range slices.Sorted(maps.Keys(table)) {
		where := key
		if prefix != "" {
			where = prefix + "." + key
		}
		value := table[key]
		if sub, ok := value.(map[string]any); ok {
			if err := f.collect(where, sub, known); err != nil {
				return err
			}
			continue
		}
		if !known[key] {
			return configError("%s: unknown key %s", f.Path, where)
		}
		if _, twice := f.Values[key]; twice {
			return configError("%s: key %s is given twice", f.Path, key)
		}
		if _, float := value.(float64); float && IsAmountKey(key) {
			return configError("%s: %s: write an amount as a quoted decimal string (%s = \"0.5\"), never a TOML float, which is rounded to binary", f.Path, where, key)
		}
		text, err := valueText(value)
		if err != nil {
			return configError("%s: %s: %w", f.Path, where, err)
		}
		if IsPathKey(key) && text != "" && !filepath.IsAbs(text) {
			text = filepath.Join(filepath.Dir(f.Path), text)
		}
		f.Values[key] = text
	}
	return nil
}

// keyLine is a line that sets a key: the key, bare or quoted, then "=".
var keyLine = regexp.MustCompile(`^\s*["']?([A-Za-z0-9_-]+)["']?\s*=`)

// IsPathKey reports whether the option key names a file or a directory:
// the state directory, the workspace, the Las entrypoint and every
// "-file" option.
func IsPathKey(key string) bool {
	switch key {
	case "state-dir", "workspace", "las-mcp-entrypoint":
		return true
	}
	return strings.HasSuffix(key, "-file")
}

// IsAmountKey reports whether the option key is an amount of money: its
// name holds "usd" (starting-balance-usd, input-price-usd-per-million,
// …). The file must write an amount as a string or an integer, whose
// text is exact; a TOML float is a binary64 by the TOML specification,
// so its digits past the 17th are lost before any reader sees them.
func IsAmountKey(key string) bool {
	return slices.Contains(strings.Split(key, "-"), "usd")
}

// valueText writes a TOML value as a flag's text.
func valueText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case time.Time:
		return "", errors.New("a date is no option's value")
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			if _, nested := e.([]any); nested {
				return "", errors.New("a list of lists is no option's value")
			}
			if _, table := e.(map[string]any); table {
				return "", errors.New("a list of tables is no option's value")
			}
			text, err := valueText(e)
			if err != nil {
				return "", err
			}
			if strings.Contains(text, ",") {
				return "", fmt.Errorf("list item %q holds a comma", text)
			}
			parts[i] = text
		}
		return strings.Join(parts, ","), nil
	case []map[string]any:
		return "", errors.New("a list of tables is no option's value")
	}
	return "", fmt.Errorf("a %T is no option's value", v)
}

// tomlReason is the parse error of the TOML library as one line, with
// its position.
func tomlReason(err error) string {
	var perr toml.ParseError
	if errors.As(err, &perr) {
		return fmt.Sprintf("line %d: %s", perr.Position.Line, perr.Message)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}
