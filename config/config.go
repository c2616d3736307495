// Package config turns the command line and the environment into one
// validated, immutable runtime configuration. Validation runs before anything
// is spawned and refuses each bad value with the exact sentence of
// docs/configuration.md#validation-sentences (exit 2), in the order of
// docs/configuration.md#variables: identity, loop and accounting, Brama,
// Las pinning, Most, and only then secrets.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wisent/singularity/internal/identity"
	"github.com/wisent/singularity/internal/store/money"
	"github.com/wisent/singularity/internal/store/state"
	"github.com/wisent/singularity/supervision"
)

// MaxStimulusBytes bounds the external observation of cycle 1.
const MaxStimulusBytes = 65536

// Runtime is the validated configuration of one process. It is a value:
// copy it freely; the slices it returns from accessors are copies.
type Runtime struct {
	// Identity is the root being's immutable identity and persona.
	Identity state.Identity

	StartingBalance  money.Amount
	InstancePerHour  money.Amount
	InputPerMillion  money.Amount
	OutputPerMillion money.Amount

	CycleInterval   time.Duration
	MaxToolRounds   int
	StateDir        string
	Workspace       string // absolute, symlinks resolved
	Resume          bool
	Stimulus        string // trimmed; empty means none
	HTTPTimeout     time.Duration
	MCPTimeout      time.Duration
	ShutdownGrace   time.Duration
	ContextMessages int
	// CheckpointEvents is how many journal events may lie past the last
	// checkpoint before a new one is written (docs/state.md#the-journal).
	CheckpointEvents int

	Brama Brama
	Las   Las
	Most  Most

	DebugAddr        string // empty: the debug endpoint is off
	DebugAllowRemote bool
	// MetricsPerBeing labels the metrics with the being
	// (SINGULARITY_METRICS_PER_BEING, default true).
	MetricsPerBeing bool
}

// Brama is how to reach and authenticate with the model gateway.
type Brama struct {
	BaseURL     *url.URL
	Model       string
	Secret      identity.Secret
	MaxTokens   int
	Temperature float64
}

// Las is how to start and pin the skill process.
type Las struct {
	Command    string
	Entrypoint string
	// Only is LAS_ONLY as given; empty means Las offers every surface.
	Only string
	// Skip is LAS_SKIP; empty means none.
	Skip                     string
	ReleaseManifest          string
	ReleaseManifestSignature string
	ReleaseTrustStore        string
	ReleaseWatermark         string
	requiredSurfaces         []string
}

// RequiredSurfaces lists the surfaces that must expose at least one tool.
func (l Las) RequiredSurfaces() []string { return append([]string(nil), l.requiredSurfaces...) }

// Most is how to reach the messaging service; Token is unset when the Most
// tools are disabled.
type Most struct {
	BaseURL *url.URL
	Token   identity.Secret
}

// Enabled reports whether the three Most tools are registered.
func (m Most) Enabled() bool { return m.Token.IsSet() }

// LookupEnv reads one environment variable; os.LookupEnv in production,
// a map in tests.
type LookupEnv func(name string) (string, bool)

// AuthSecretEnv is the fallback source of the Brama HMAC secret.
const AuthSecretEnv = "WISENT_APP_AGENT_AUTH_SECRET"

func configError(format string, args ...any) error {
	return supervision.Errorf(supervision.ClassConfiguration, format, args...)
}

// Load validates every option and returns the runtime configuration, or
// the first failure as a classified error whose text is its sentence in
// docs/configuration.md#validation-sentences.
func Load(f Flags, env LookupEnv) (Runtime, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var rt Runtime
	var err error
	if rt.Identity, err = loadIdentity(f.Identity); err != nil {
		return Runtime{}, err
	}
	if err = loadLoop(&rt, f.Loop); err != nil {
		return Runtime{}, err
	}
	if rt.Brama, err = loadBrama(f.Brama); err != nil {
		return Runtime{}, err
	}
	if rt.Las, err = LoadLas(f.Las); err != nil {
		return Runtime{}, err
	}
	if rt.Most.BaseURL, err = parseServiceURL("MOST_BASE_URL", f.Most.BaseURL); err != nil {
		return Runtime{}, err
	}
	if rt.DebugAddr, err = debugAddress(f.DebugAddr, f.DebugAllow); err != nil {
		return Runtime{}, err
	}
	rt.DebugAllowRemote = f.DebugAllow
	rt.MetricsPerBeing = f.MetricsPerBeing
	if rt.Brama.Secret, err = bramaSecret(f.Brama.SecretFile, env); err != nil {
		return Runtime{}, err
	}
	if f.Most.TokenFile != "" {
		if rt.Most.Token, err = ReadSecretFile(f.Most.TokenFile); err != nil {
			return Runtime{}, err
		}
	}
	return rt, nil
}

func loadIdentity(f IdentityFlags) (state.Identity, error) {
	ids := []struct{ label, value string }{
		{"agent id", f.AgentID},
		{"role", f.Role},
		{"environment", f.Environment},
		{"host", f.Host},
		{"workload id", f.WorkloadID},
	}
	for _, id := range ids {
		if !identity.Valid(id.value) {
			return state.Identity{}, configError("%s is not a valid immutable identifier", id.label)
		}
	}
	digests := []struct{ label, value string }{
		{"workload public key", f.WorkloadPublicKey},
		{"executable digest", f.ExecutableSHA256},
		{"code digest", f.CodeSHA256},
		{"policy digest", f.PolicySHA256},
	}
	for _, d := range digests {
		if !validDigest(d.value) {
			return state.Identity{}, configError("%s must be 64 lowercase hexadecimal characters", d.label)
		}
	}
	seq, err := strconv.ParseUint(f.PolicySequence, 10, 64)
	if err != nil {
		return state.Identity{}, configError("policy sequence must be an unsigned integer")
	}
	return state.Identity{
		AgentID:           f.AgentID,
		Name:              f.AgentName,
		Ticker:            f.AgentTicker,
		AgentType:         f.AgentType,
		Specialty:         f.Specialty,
		Role:              f.Role,
		Environment:       f.Environment,
		Host:              f.Host,
		WorkloadID:        f.WorkloadID,
		WorkloadPublicKey: f.WorkloadPublicKey,
		ExecutableDigest:  f.ExecutableSHA256,
		CodeDigest:        f.CodeSHA256,
		PolicyDigest:      f.PolicySHA256,
		PolicySequence:    seq,
	}, nil
}

func validDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func loadLoop(rt *Runtime, f LoopFlags) error {
	prices := []struct {
		name, text string
		dst        *money.Amount
	}{
		{"starting balance", f.StartingBalance, &rt.StartingBalance},
		{"instance price", f.InstancePerHour, &rt.InstancePerHour},
		{"input price", f.InputPerMillion, &rt.InputPerMillion},
		{"output price", f.OutputPerMillion, &rt.OutputPerMillion},
	}
	for _, p := range prices {
		v, err := money.Parse(p.text)
		if err != nil {
			return configError("%s must be a decimal number", p.name)
		}
		if v.Sign() < 0 {
			return configError("prices and balance cannot be negative")
		}
		*p.dst = v
	}
	var err error
	if rt.CycleInterval, err = seconds("cycle interval", f.CycleInterval); err != nil {
		return err
	}
	rounds, err := strconv.ParseUint(f.MaxToolRounds, 10, 31)
	if err != nil {
		return configError("max tool rounds must be a positive integer")
	}
	if rounds == 0 {
		return configError("max tool rounds must be positive")
	}
	rt.MaxToolRounds = int(rounds)
	if f.StateDir == "" {
		return configError("state directory must not be empty")
	}
	rt.StateDir = f.StateDir
	if rt.Workspace, err = workspace(f.Workspace); err != nil {
		return err
	}
	rt.Resume = f.Resume
	rt.Stimulus = strings.TrimSpace(f.Stimulus)
	if len(rt.Stimulus) > MaxStimulusBytes || strings.ContainsRune(rt.Stimulus, 0) {
		return configError("stimulus must be at most 65536 bytes and contain no NUL")
	}
	if rt.HTTPTimeout, err = positiveSeconds("HTTP timeout", f.HTTPTimeout); err != nil {
		return err
	}
	if rt.MCPTimeout, err = positiveSeconds("MCP timeout", f.MCPTimeout); err != nil {
		return err
	}
	if rt.ShutdownGrace, err = seconds("shutdown grace", f.ShutdownGrace); err != nil {
		return err
	}
	window, err := strconv.ParseUint(f.ContextMessages, 10, 31)
	if err != nil || window == 0 {
		return configError("context messages must be a positive integer")
	}
	rt.ContextMessages = int(window)
	events, err := strconv.ParseUint(strings.TrimSpace(f.CheckpointEvents), 10, 31)
	if err != nil || events == 0 {
		return configError("checkpoint events must be a positive integer")
	}
	rt.CheckpointEvents = int(events)
	return nil
}

// seconds parses a non-negative whole or fractional number of seconds.
func seconds(label, text string) (time.Duration, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e9 {
		return 0, configError("%s must be a non-negative number of seconds", label)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func positiveSeconds(label, text string) (time.Duration, error) {
	d, err := seconds(label, text)
	if err == nil && d <= 0 {
		err = configError("%s must be a positive number of seconds", label)
	}
	return d, err
}

func workspace(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(abs); err == nil && !info.IsDir() {
			return "", configError("workspace must be a directory")
		}
	}
	if err != nil {
		return "", configError("workspace: %w", osError{err})
	}
	return abs, nil
}

// osError is an OS error that prints as the OS's own text, without the
// operation and path that *PathError adds, so a sentence can name the path
// once; errors.Is and errors.As still reach the whole error.
type osError struct{ err error }

func (e osError) Error() string {
	var pe *os.PathError
	if errors.As(e.err, &pe) {
		return pe.Err.Error()
	}
	return e.err.Error()
}

func (e osError) Unwrap() error { return e.err }

func loadBrama(f BramaFlags) (Brama, error) {
	base, err := parseServiceURL("BRAMA_BASE_URL", f.BaseURL)
	if err != nil {
		return Brama{}, err
	}
	if strings.TrimSpace(f.Model) == "" {
		return Brama{}, configError("model must not be empty")
	}
	maxTokens, err := strconv.ParseUint(f.MaxTokens, 10, 31)
	if err != nil || maxTokens == 0 {
		return Brama{}, configError("max tokens must be positive")
	}
	temp, err := strconv.ParseFloat(f.Temperature, 64)
	if err != nil || math.IsNaN(temp) || math.IsInf(temp, 0) || temp < 0 || temp > 2 {
		return Brama{}, configError("temperature must be finite and between zero and two")
	}
	return Brama{BaseURL: base, Model: f.Model, MaxTokens: int(maxTokens), Temperature: temp}, nil
}

func parseServiceURL(name, text string) (*url.URL, error) {
	u, err := url.Parse(text)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, configError("%s: %w", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, configError("%s must use http or https", name)
	}
	return u, nil
}

// LoadLas validates the Las selection and pinning
// (docs/configuration.md#variables). The tools command uses it alone; Load
// uses it as one step of the whole.
func LoadLas(f LasFlags) (Las, error) {
	info, err := os.Stat(f.Entrypoint)
	if err != nil || info.IsDir() {
		return Las{}, configError("LAS entrypoint not found: %s", f.Entrypoint)
	}
	files := []struct{ label, path string }{
		{"LAS release manifest", f.Manifest},
		{"LAS release manifest signature", f.ManifestSig},
		{"LAS release trust store", f.TrustStore},
	}
	for _, file := range files {
		if !absoluteRegularFile(file.path) {
			return Las{}, configError("%s must be an absolute regular file", file.label)
		}
	}
	if !filepath.IsAbs(f.Watermark) {
		return Las{}, configError("LAS release watermark must be an absolute path")
	}
	return Las{
		Command:                  f.Command,
		Entrypoint:               f.Entrypoint,
		Only:                     f.Only,
		Skip:                     f.Skip,
		ReleaseManifest:          f.Manifest,
		ReleaseManifestSignature: f.ManifestSig,
		ReleaseTrustStore:        f.TrustStore,
		ReleaseWatermark:         f.Watermark,
		requiredSurfaces:         SplitList(f.RequiredSurfaces),
	}, nil
}

func absoluteRegularFile(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// SplitList splits a comma list, trimming entries and dropping blanks.
func SplitList(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func debugAddress(addr string, allowRemote bool) (string, error) {
	if addr == "" || allowRemote {
		return addr, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", configError("debug address: %w", err)
	}
	if host == "localhost" {
		return addr, nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return addr, nil
	}
	return "", configError("debug address must be loopback")
}

func bramaSecret(file string, env LookupEnv) (identity.Secret, error) {
	if file != "" {
		return ReadSecretFile(file)
	}
	if v, ok := env(AuthSecretEnv); ok && v != "" {
		return identity.NewSecret([]byte(v)), nil
	}
	return identity.Secret{}, supervision.New(supervision.ClassSecret, "BRAMA_HMAC_SECRET_FILE or WISENT_APP_AGENT_AUTH_SECRET is required")
}

// ReadSecretFile reads a credential from path
// (docs/configuration.md#variables): it must be a regular file, not group- or
// world-accessible, and non-empty once trailing CR and LF are stripped.
// Errors name the path, never the value.
func ReadSecretFile(path string) (identity.Secret, error) {
	info, err := os.Stat(path)
	if err != nil {
		return identity.Secret{}, supervision.Errorf(supervision.ClassSecret, "%s: %w", path, osError{err})
	}
	if !info.Mode().IsRegular() {
		return identity.Secret{}, supervision.Errorf(supervision.ClassSecret, "not a regular file: %s", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return identity.Secret{}, supervision.Errorf(supervision.ClassSecret, "%s must not be group/world accessible", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return identity.Secret{}, supervision.Errorf(supervision.ClassSecret, "%s: %w", path, osError{err})
	}
	value := strings.TrimRight(string(data), "\r\n")
	if value == "" {
		return identity.Secret{}, supervision.Errorf(supervision.ClassSecret, "%s is empty", path)
	}
	return identity.NewSecret([]byte(value)), nil
}

// String summarises the configuration for logs; it holds no secret.
func (rt Runtime) String() string {
	return fmt.Sprintf("agent %s, state %s, brama %s model %s", rt.Identity.AgentID, rt.StateDir, rt.Brama.BaseURL, rt.Brama.Model)
}
