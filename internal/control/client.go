package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// Ask sends req to the runtime listening at path and waits for its reply
// until timeout has passed. ErrNoRuntime means no runtime listens there:
// no socket, or one its runtime left behind when it was killed (nothing
// accepts on it).
func Ask(path string, req Request, timeout time.Duration) (Reply, error) {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return Reply{}, ErrNoRuntime
		}
		return Reply{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Reply{}, fmt.Errorf("control socket %s: %w", path, err)
	}
	var reply Reply
	if err := json.NewDecoder(conn).Decode(&reply); err != nil {
		return Reply{}, fmt.Errorf("control socket %s: no answer within %s: %w", path, timeout, err)
	}
	return reply, nil
}
