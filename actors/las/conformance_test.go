package las

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/wisent/singularity/messages"
	"github.com/wisent/singularity/supervision"
)

// conformanceFlag, as the only argument of this test binary, makes it the
// scripted server of a transcript; its value is the run's directory.
const conformanceFlag = "-las.conformance-server="

// conformanceWorkspace is the workspace answered to roots/list.
const conformanceWorkspace = "/conformance/workspace"

// conformanceStep bounds each wait of the client script.
const conformanceStep = 10 * time.Second

// TestConformance replays the transcripts of testdata/conformance: the
// robustness rules of docs/las.md, each played against a Las actor on a
// stdio session over real pipes to a real child process.
//
// Each transcript is a txtar archive. Its comment says which rule it
// covers. Its files:
//
//   - "options": the actor's deadlines and limits, one "key value" a
//     line (call-timeout, ping-timeout, shutdown-grace, term-grace,
//     max-line).
//   - "server", "server 2", …: the script of the server, for its first
//     process and for the one started after each restart. The server is
//     this test binary run again (conformanceFlag), which plays the
//     script over its stdin and stdout:
//     "<- JSON" reads the client's next line, which must be that JSON
//     message (compared as JSON values); "-> JSON" writes a line, as it
//     is; "->raw TEXT" writes TEXT as it is (possibly nothing: a blank
//     line) and "->crlf TEXT" with a CR before the newline; "->pad N
//     JSON" writes JSON padded with spaces to exactly N bytes; "eof"
//     waits for the end of stdin; "trap-term" ignores SIGTERM from then
//     on and "await-term" waits for one; "hang", the last step, waits to
//     be killed. A script that ends otherwise waits for the end of stdin
//     and exits 0: a line the client sends past the end of the script
//     is a failure.
//   - "client": what the test does and what the actor must report, in
//     order: "call LABEL TOOL ARGS [DEADLINE]" sends a call without
//     waiting; "outcome LABEL STATUS CODE CONTENT" waits for that call's
//     outcome (CODE "-" for none); "catalog TOOL…", "restarted REASON"
//     and "warning TEXT" wait for the next event the actor sends its
//     parent, which must be that one; "stop [under DURATION]" stops the
//     actor, waits until it has stopped, and checks that no process of
//     the server is left.
//
// After the client script every server process must have reached the
// end of its script, and the actor must have sent no event the script
// did not expect.
func TestConformance(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "conformance", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			replay(t, parseArchive(b))
		})
	}
}

// --- txtar ---------------------------------------------------------------

// archive is a txtar archive: a comment, then files, each introduced by a
// line "-- name --".
type archive struct {
	comment string
	files   map[string]string
	order   []string
}

func parseArchive(b []byte) archive {
	a := archive{files: map[string]string{}}
	name, body := "", &strings.Builder{}
	flush := func() {
		if name == "" {
			a.comment = body.String()
		} else {
			a.files[name] = body.String()
			a.order = append(a.order, name)
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(string(b), "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if n, ok := strings.CutPrefix(trimmed, "-- "); ok {
			if n, ok := strings.CutSuffix(n, " --"); ok && strings.TrimSpace(n) != "" {
				flush()
				name = strings.TrimSpace(n)
				continue
			}
		}
		body.WriteString(line)
	}
	flush()
	return a
}

// steps are the lines of a script that are neither blank nor comments
// (#), with their line numbers in the file.
func steps(script string) (lines []string, numbers []int) {
	for i, line := range strings.Split(script, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		lines, numbers = append(lines, line), append(numbers, i+1)
	}
	return lines, numbers
}

// serverScripts are the "server", "server 2", … files of a transcript,
// one per process, in order.
func serverScripts(a archive) []string {
	var out []string
	for n := 1; ; n++ {
		name := "server"
		if n > 1 {
			name = fmt.Sprintf("server %d", n)
		}
		script, ok := a.files[name]
		if !ok {
			return out
		}
		out = append(out, script)
	}
}

// --- the client side -----------------------------------------------------

// replay runs one transcript: the actor against its server scripts, the
// client script driving it.
func replay(t *testing.T, a archive) {
	dir := t.TempDir()
	scripts := serverScripts(a)
	if len(scripts) == 0 {
		t.Fatal("the transcript has no server script")
	}
	for i, script := range scripts {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("script-%d", i+1)), []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{
		Command:       os.Args[0],
		Entrypoint:    conformanceFlag + dir,
		AgentID:       "agent-ada",
		Workspace:     conformanceWorkspace,
		CallTimeout:   5 * time.Second,
		ShutdownGrace: 5 * time.Second,
		TermGrace:     5 * time.Second,
		PingInterval:  -1,
		PingTimeout:   5 * time.Second,
		BeingName:     "Ada",
		Logger:        quietLogger(),
		LookupEnv:     func(string) (string, bool) { return "", false },
	}
	applyOptions(t, a.files["options"], &opts)
	h := startWith(t, opts, supervision.LasConfig{}, "")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i := range scripts {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("report-%d", i+1)))
			t.Logf("server %d reported: %s", i+1, b)
		}
	})

	d := &driver{t: t, h: h, futures: map[string]*actor.Future{}}
	lines, numbers := steps(a.files["client"])
	for i, line := range lines {
		d.line = numbers[i]
		d.step(line)
	}
	if !d.stopped {
		d.stop(0)
	}
	for _, ev := range h.drain() {
		if _, ok := ev.(*actor.Terminated); !ok {
			t.Errorf("the actor sent %T %+v, which the client script does not expect", ev, ev)
		}
	}
	for i := range scripts {
		verdict, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("report-%d", i+1)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.Errorf("server %d never started", i+1)
		case err != nil:
			t.Error(err)
		case string(verdict) != "ok":
			t.Errorf("server %d: %s", i+1, verdict)
		}
	}
	if extra, _ := filepath.Glob(filepath.Join(dir, "report-[0-9]*[0-9]")); len(extra) > len(scripts) {
		t.Errorf("the server was started %d times, the transcript has %d scripts", len(extra), len(scripts))
	}
}

func applyOptions(t *testing.T, text string, o *Options) {
	t.Helper()
	lines, _ := steps(text)
	for _, line := range lines {
		key, value, _ := strings.Cut(line, " ")
		value = strings.TrimSpace(value)
		if key == "max-line" {
			n, err := strconv.Atoi(value)
			if err != nil {
				t.Fatalf("options: %s: %v", line, err)
			}
			o.MaxLineBytes = n
			continue
		}
		d, err := time.ParseDuration(value)
		if err != nil {
			t.Fatalf("options: %s: %v", line, err)
		}
		switch key {
		case "call-timeout":
			o.CallTimeout = d
		case "ping-timeout":
			o.PingTimeout = d
		case "shutdown-grace":
			o.ShutdownGrace = d
		case "term-grace":
			o.TermGrace = d
		default:
			t.Fatalf("options: unknown option %q", key)
		}
	}
}

// driver plays the client script.
type driver struct {
	t       *testing.T
	h       *harness
	line    int
	futures map[string]*actor.Future
	stopped bool
}

func (d *driver) fatalf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("client line %d: %s", d.line, fmt.Sprintf(format, args...))
}

func (d *driver) step(line string) {
	d.t.Helper()
	verb, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch verb {
	case "call":
		d.call(rest)
	case "outcome":
		d.outcome(rest)
	case "catalog":
		got := d.event()
		ev, ok := got.(messages.LasCatalogChanged)
		if !ok {
			d.fatalf("want a catalogue, the actor sent %T %+v", got, got)
		}
		var names []string
		for _, tool := range ev.Tools {
			names = append(names, tool.Function.Name)
		}
		if want := strings.Fields(rest); !reflect.DeepEqual(names, want) && (len(names) > 0 || len(want) > 0) {
			d.fatalf("catalogue %q, want %q", names, want)
		}
	case "restarted":
		got := d.event()
		ev, ok := got.(messages.LasRestarted)
		if !ok || ev.Reason != rest {
			d.fatalf("want the restart %q, the actor sent %T %+v", rest, got, got)
		}
	case "warning":
		got := d.event()
		ev, ok := got.(messages.LasWarning)
		if !ok || ev.Text != rest {
			d.fatalf("want the warning %q, the actor sent %T %+v", rest, got, got)
		}
	case "stop":
		var under time.Duration
		if v, ok := strings.CutPrefix(rest, "under "); ok {
			var err error
			if under, err = time.ParseDuration(v); err != nil {
				d.fatalf("%v", err)
			}
		}
		d.stop(under)
	default:
		d.fatalf("unknown step %q", line)
	}
}

// call sends "LABEL TOOL ARGS [DEADLINE]" and keeps its future.
func (d *driver) call(rest string) {
	d.t.Helper()
	f := strings.Fields(rest)
	if len(f) < 3 {
		d.fatalf("call wants a label, a tool and arguments")
	}
	within := 5 * time.Second
	args := strings.Join(f[2:], " ")
	if len(f) > 3 {
		if v, err := time.ParseDuration(f[len(f)-1]); err == nil {
			within, args = v, strings.Join(f[2:len(f)-1], " ")
		}
	}
	req := messages.LasCallRequest{Tool: f[1], Arguments: json.RawMessage(args), Deadline: time.Now().Add(within)}
	d.futures[f[0]] = d.h.system.Root.RequestFuture(d.h.las, req, within+conformanceStep)
}

// outcome checks "LABEL STATUS CODE CONTENT".
func (d *driver) outcome(rest string) {
	d.t.Helper()
	f := strings.SplitN(rest, " ", 4)
	if len(f) != 4 {
		d.fatalf("outcome wants a label, a status, a code and the content")
	}
	fut, ok := d.futures[f[0]]
	if !ok {
		d.fatalf("no call %q", f[0])
	}
	res, err := fut.Result()
	if err != nil {
		d.fatalf("call %s: %v", f[0], err)
	}
	o := res.(messages.LasCallResponse).Outcome
	code := f[2]
	if code == "-" {
		code = ""
	}
	if o.Status != f[1] || o.ErrorCode != code || !sameJSON([]byte(f[3]), o.Content) {
		d.fatalf("call %s: outcome %s %q %s, want %s %q %s", f[0], o.Status, o.ErrorCode, o.Content, f[1], code, f[3])
	}
}

// event is the next event the actor sent its parent, *actor.Terminated
// aside.
func (d *driver) event() any {
	d.t.Helper()
	deadline := time.NewTimer(conformanceStep)
	defer deadline.Stop()
	for {
		select {
		case ev := <-d.h.events:
			if _, ok := ev.(*actor.Terminated); ok {
				continue
			}
			return ev
		case <-deadline.C:
			d.fatalf("no event from the actor within %v", conformanceStep)
			return nil
		}
	}
}

// stop stops the actor, waits until it has stopped (the shutdown ladder
// included) and checks that its server's process group is gone.
func (d *driver) stop(under time.Duration) {
	d.t.Helper()
	pid, _ := d.h.describe().Figures["process_id"].(int)
	began := time.Now()
	if err := d.h.system.Root.StopFuture(d.h.las).Wait(); err != nil {
		d.fatalf("stop: %v", err)
	}
	took := time.Since(began)
	d.stopped = true
	if under > 0 && took >= under {
		d.fatalf("the stop took %v, want under %v", took, under)
	}
	if pid > 0 {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			d.fatalf("the server's process group %d outlived the stop (kill: %v)", pid, err)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	va, oka := decodeJSON(a)
	vb, okb := decodeJSON(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	_, err := dec.Token()
	return v, errors.Is(err, io.EOF)
}

// --- the server side -----------------------------------------------------

// serveConformance plays a server script when this binary was started
// as the scripted server of a transcript, and reports whether it was.
func serveConformance() bool {
	if len(os.Args) != 2 || !strings.HasPrefix(os.Args[1], conformanceFlag) {
		return false
	}
	dir := strings.TrimPrefix(os.Args[1], conformanceFlag)
	// The n-th process of a transcript plays its n-th script; its
	// report says how far it got.
	for n := 1; ; n++ {
		report := filepath.Join(dir, fmt.Sprintf("report-%d", n))
		f, err := os.OpenFile(report, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			os.Exit(2)
		}
		_ = f.Close()
		script, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("script-%d", n)))
		if err != nil {
			_ = os.WriteFile(report, []byte(fmt.Sprintf("started %d times, the transcript has %d scripts", n, n-1)), 0o600)
			os.Exit(1)
		}
		p := &player{report: report, out: os.Stdout, lines: readLines(os.Stdin)}
		os.Exit(p.play(string(script)))
	}
}

// player plays one server script.
type player struct {
	report string
	out    io.Writer
	lines  <-chan string // the client's lines; closed at the end of stdin
	term   chan os.Signal
}

// readLines passes the lines of r on until its end.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// note replaces the report with text, atomically: the process may be
// killed at any moment.
func (p *player) note(text string) {
	if os.WriteFile(p.report+".new", []byte(text), 0o600) == nil {
		_ = os.Rename(p.report+".new", p.report)
	}
}

// play runs the script and returns the exit status. A script that ends
// in "hang" is complete once its last check (a line read, the end of
// stdin, a SIGTERM) has passed: what follows are only lines written
// before the client kills the server, and the kill may come at once.
func (p *player) play(script string) int {
	lines, numbers := steps(script)
	complete := len(lines) // the step after which the script is complete
	if len(lines) > 0 && lines[len(lines)-1] == "hang" {
		complete = 0
		for i, line := range lines {
			if isCheck(line) {
				complete = i + 1
			}
		}
	}
	for i, line := range lines {
		if i == complete {
			p.note("ok")
		} else if i < complete {
			p.note(fmt.Sprintf("stopped at line %d: %s", numbers[i], line))
		}
		if err := p.step(line); err != nil {
			p.note(fmt.Sprintf("line %d: %s: %v", numbers[i], line, err))
			return 1
		}
	}
	p.note("stopped after the script, waiting for the end of stdin")
	if line, ok := <-p.lines; ok {
		p.note(fmt.Sprintf("the client sent a line past the end of the script: %s", line))
		return 1
	}
	p.note("ok")
	return 0
}

// isCheck reports whether a script step checks what the client did.
func isCheck(line string) bool {
	verb, _, _ := strings.Cut(line, " ")
	return verb == "<-" || verb == "eof" || verb == "await-term"
}

func (p *player) step(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "<-":
		got, ok := <-p.lines
		if !ok {
			return errors.New("stdin ended")
		}
		if !sameJSON([]byte(got), []byte(rest)) {
			return fmt.Errorf("the client sent %s", got)
		}
	case "->", "->raw":
		return p.write(rest + "\n")
	case "->crlf":
		return p.write(rest + "\r\n")
	case "->pad":
		size, msg, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(size)
		if err != nil || n < len(msg) {
			return fmt.Errorf("cannot pad %d bytes to %s", len(msg), size)
		}
		return p.write(msg + strings.Repeat(" ", n-len(msg)) + "\n")
	case "eof":
		if got, ok := <-p.lines; ok {
			return fmt.Errorf("the client sent %s", got)
		}
	case "trap-term":
		p.term = make(chan os.Signal, 1)
		signal.Notify(p.term, syscall.SIGTERM)
	case "await-term":
		if p.term == nil {
			return errors.New("await-term without trap-term")
		}
		<-p.term
	case "hang":
		for { // until the client kills this process
			time.Sleep(time.Hour)
		}
	default:
		return fmt.Errorf("unknown step %q", verb)
	}
	return nil
}

func (p *player) write(text string) error {
	_, err := io.WriteString(p.out, text)
	return err
}
