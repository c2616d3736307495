package config

import (
	"errors"

	"github.com/wisent/singularity/internal/boundedfile"
	"github.com/wisent/singularity/supervision/fault"
)

// Caps on the files the configuration reads
// (docs/configuration.md#file-caps). Each is read only if it is a regular
// file, with an open that never blocks, and never past its cap
// (boundedfile), so a FIFO, a device or a huge file is refused at once.
const (
	// MaxConfigFileBytes caps the configuration file (--config).
	MaxConfigFileBytes = 1 << 20
	// MaxPricesFileBytes caps BRAMA_PRICES_FILE: room for thousands of
	// models.
	MaxPricesFileBytes = 4 << 20
	// MaxTiersFileBytes caps SINGULARITY_TIERS_FILE.
	MaxTiersFileBytes = 1 << 20
	// MaxServersFileBytes caps LAS_SERVERS_FILE.
	MaxServersFileBytes = 1 << 20
	// MaxSecretFileBytes caps a secret file: a key, a token or a PEM
	// block is far below it.
	MaxSecretFileBytes = 64 << 10
)

// readFile returns the bytes of the regular file at path if it holds at
// most limit bytes (boundedfile.Read). A refusal reads, without the path,
// as the os error ("no such file or directory"), "not a regular file" or
// "larger than the <cap> cap", for the caller's sentence to name the
// file.
func readFile(path string, limit int64) ([]byte, error) {
	data, err := boundedfile.Read(path, limit)
	if err != nil {
		return nil, osError{err}
	}
	return data, nil
}

// readSecretBytes reads the secret file at path as ReadSecretFile
// describes, its refusals included, save the emptiness check. Its mode
// is checked on the file opened, before a byte is read.
func readSecretBytes(path string) ([]byte, error) {
	f, err := boundedfile.Open(path)
	if errors.Is(err, boundedfile.ErrNotRegular) {
		return nil, fault.Errorf(fault.ClassSecret, "not a regular file: %s", path)
	}
	if err != nil {
		return nil, fault.Errorf(fault.ClassSecret, "%s: %w", path, osError{err})
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fault.Errorf(fault.ClassSecret, "%s: %w", path, osError{err})
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fault.Errorf(fault.ClassSecret, "%s must not be group/world accessible", path)
	}
	data, err := boundedfile.ReadOpen(f, MaxSecretFileBytes)
	var large *boundedfile.TooLargeError
	if errors.As(err, &large) {
		return nil, fault.Errorf(fault.ClassSecret, "%s is %w", path, err)
	}
	if err != nil {
		return nil, fault.Errorf(fault.ClassSecret, "%s: %w", path, osError{err})
	}
	return data, nil
}
