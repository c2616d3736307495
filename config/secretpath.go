package config

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/supervision/fault"
)

// SecretFileVariables are the environment variables of the options
// that name a secret file (docs/configuration.md#secret-files).
var SecretFileVariables = []string{"BRAMA_HMAC_SECRET_FILE", "BRAMA_API_KEY_FILE", "MOST_SERVICE_TOKEN_FILE"}

// minKeyLikePath is the length past which a path without "/" may be a
// key given in place of its file.
const minKeyLikePath = 20

// HidesSecretPath reports whether path, the value of a secret-file
// option, must not be echoed: it does not exist, is longer than 20
// characters and has no "/", so it may well be the key itself given in
// place of its file.
func HidesSecretPath(path string) bool {
	if len(path) <= minKeyLikePath || strings.Contains(path, "/") {
		return false
	}
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// readSecretOption reads the secret file that the option with
// environment variable name names (ReadSecretFile); a path it must not
// echo (HidesSecretPath) is refused as "secret file: <name>: no such
// file".
func readSecretOption(name, path string) (identity.Secret, error) {
	if HidesSecretPath(path) {
		return identity.Secret{}, fault.Errorf(fault.ClassSecret, "%s: no such file", name)
	}
	return ReadSecretFile(path)
}
