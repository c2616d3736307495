package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// withoutScript loads pageURL in headless Chromium at width×height with
// script execution switched off, and returns the DOM as Chromium holds it
// and a PNG screenshot.
func withoutScript(t *testing.T, pageURL string, width, height int) (dom string, png []byte) {
	t.Helper()
	v := look(t, pageURL, width, height, false)
	return v.dom, v.png
}

// view is a page as Chromium drew it: its DOM, a screenshot, and the
// border box and markup of the first element each selector asked for
// matches (absent when none does).
type view struct {
	dom   string
	png   []byte
	boxes map[string]box
	html  map[string]string
}

// box is an element's border box in CSS pixels of the viewport.
type box struct{ Left, Top, Right, Bottom float64 }

// seen says whether b is drawn and wholly inside a viewport width×height.
func (b box) seen(width, height int) bool {
	return b.Right > b.Left && b.Bottom > b.Top && b.Left >= 0 && b.Top >= 0 &&
		b.Right <= float64(width) && b.Bottom <= float64(height)
}

// look loads pageURL in headless Chromium at width×height through the
// DevTools protocol (over --remote-debugging-pipe: the switches that
// turn script off also stop --dump-dom and --screenshot), with script
// execution on or off. With script on it waits until the page's script
// has refreshed the page once (its "updated" line). It returns the view,
// with the boxes and markup of selectors.
func look(t *testing.T, pageURL string, width, height int, script bool, selectors ...string) view {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("headless browser test skipped: %s is not installed (apt-get install chromium)", chromiumPath)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), browserDeadline)
	defer cancel()
	cmdR, cmdW, err := os.Pipe() // Chromium reads commands from fd 3
	require.NoError(t, err)
	outR, outW, err := os.Pipe() // and writes answers to fd 4
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--remote-debugging-pipe", "--user-data-dir="+filepath.Join(home, "profile"), "about:blank")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	cmdR.Close()
	outW.Close()
	defer func() {
		cmdW.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		outR.Close()
	}()

	type message struct {
		ID     int             `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	in := bufio.NewReader(outR)
	next := 0
	var events []string
	// call sends one command and waits for its answer, noting the
	// events that arrive meanwhile.
	call := func(session, method string, params any, out any) {
		t.Helper()
		next++
		req := map[string]any{"id": next, "method": method, "params": params}
		if session != "" {
			req["sessionId"] = session
		}
		raw, err := json.Marshal(req)
		require.NoError(t, err)
		_, err = cmdW.Write(append(raw, 0))
		require.NoError(t, err)
		for {
			line, err := in.ReadBytes(0)
			require.NoError(t, err, "chromium's pipe, waiting for %s", method)
			var m message
			require.NoError(t, json.Unmarshal(line[:len(line)-1], &m))
			if m.ID == 0 {
				events = append(events, m.Method)
				continue
			}
			require.Equal(t, next, m.ID)
			require.Empty(t, m.Error, "%s", method)
			if out != nil {
				require.NoError(t, json.Unmarshal(m.Result, out))
			}
			return
		}
	}
	var target struct {
		TargetID string `json:"targetId"`
	}
	call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	s := attached.SessionID
	call(s, "Emulation.setScriptExecutionDisabled", map[string]any{"value": !script}, nil)
	call(s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	call(s, "Page.enable", map[string]any{}, nil)
	call(s, "Page.navigate", map[string]any{"url": pageURL}, nil)
	// Wait for the load event.
	for loaded := false; !loaded; {
		for _, e := range events {
			loaded = loaded || e == "Page.loadEventFired"
		}
		if !loaded {
			call(s, "Page.getFrameTree", map[string]any{}, nil) // a round trip lets events arrive
			time.Sleep(50 * time.Millisecond)                   // not synchronisation: only paces the polling
		}
	}
	type docRoot struct {
		Root struct {
			NodeID int `json:"nodeId"`
		} `json:"root"`
	}
	outer := func(id int) string {
		var html struct {
			OuterHTML string `json:"outerHTML"`
		}
		call(s, "DOM.getOuterHTML", map[string]any{"nodeId": id}, &html)
		return html.OuterHTML
	}
	var doc docRoot
	call(s, "DOM.getDocument", map[string]any{"depth": -1}, &doc)
	v := view{dom: outer(doc.Root.NodeID), boxes: map[string]box{}, html: map[string]string{}}
	for script && !strings.Contains(v.dom, `<span id="meta">updated `) {
		time.Sleep(50 * time.Millisecond) // not synchronisation: only paces the polling
		call(s, "DOM.getDocument", map[string]any{"depth": -1}, &doc)
		v.dom = outer(doc.Root.NodeID)
	}
	for _, sel := range selectors {
		var found struct {
			NodeID int `json:"nodeId"`
		}
		call(s, "DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": sel}, &found)
		if found.NodeID == 0 {
			continue
		}
		var model struct {
			Model struct {
				Border []float64 `json:"border"` // four corners, x and y each
			} `json:"model"`
		}
		call(s, "DOM.getBoxModel", map[string]any{"nodeId": found.NodeID}, &model)
		q := model.Model.Border
		require.Len(t, q, 8, "the box of %s", sel)
		v.boxes[sel] = box{Left: q[0], Top: q[1], Right: q[4], Bottom: q[5]}
		v.html[sel] = outer(found.NodeID)
	}
	var shot struct {
		Data string `json:"data"`
	}
	call(s, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err, fmt.Sprintf("screenshot of %s", pageURL))
	v.png = png
	return v
}
