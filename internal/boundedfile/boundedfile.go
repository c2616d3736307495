// Package boundedfile opens and reads the files the runtime takes in
// (its configuration, prices, tiers, servers and secret files, and the
// state directory's files) in bounded time and memory: only a regular
// file is read, the open never blocks (a FIFO or a device is refused,
// not waited on or drained), and no more than a cap is ever held.
//
// Errors are plain: the os error of the open, ErrNotRegular, or a
// *TooLargeError. Each caller writes them into its own sentence with the
// name of the file and the class of its failure.
package boundedfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular reports a path that names something other than a
// regular file: a directory, a FIFO, a socket or a device (a symbolic
// link is followed, so a link to /dev/zero is a device).
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError reports a file larger than the cap of its kind.
type TooLargeError struct {
	// Cap is the cap in bytes.
	Cap int64
}

// Error reads "larger than the <cap> cap", the cap in KiB or MiB.
func (e *TooLargeError) Error() string {
	return "larger than the " + Size(e.Cap) + " cap"
}

// Size writes a cap as people read it: whole MiB or KiB when it is one,
// else bytes ("16 MiB", "64 KiB", "1000 bytes").
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Open opens path for reading and returns it only if it is a regular
// file. What the path names is looked at before the open, so a device,
// a socket or a directory is refused without being opened (opening some
// devices acts); the open is non-blocking and never makes a terminal the
// controlling one, so a FIFO without a writer returns at once; and the
// check is made again with fstat on what was opened, so a path swapped
// meanwhile cannot slip through. A failed open returns the os error (an
// *os.PathError); anything but a regular file returns ErrNotRegular.
// O_NONBLOCK has no effect on the reads of a regular file.
func Open(path string) (*os.File, error) {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		_ = f.Close()
		return nil, ErrNotRegular
	}
	return f, nil
}

// Read returns the content of the regular file at path (see Open) if it
// holds at most limit bytes. A file whose size is past limit is refused
// by its fstat before anything is read, and one that grows past limit
// while it is read is refused as soon as limit+1 bytes are in, so
// neither time nor memory depends on the file: a sparse file of
// terabytes costs one fstat.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadOpen(f, limit)
}

// ReadOpen is Read on a file already opened by Open. It does not close f.
func ReadOpen(f *os.File, limit int64) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > limit {
		return nil, &TooLargeError{Cap: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Cap: limit}
	}
	return data, nil
}
