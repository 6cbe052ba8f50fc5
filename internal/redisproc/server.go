// Package redisproc starts and stops real redis-server processes on free
// loopback ports: a single server, a small Redis Cluster with replicas
// when asked for ([WithReplicas]), a Sentinel setup; [Cluster.Failover],
// [Cluster.KillMaster] and [Cluster.MigrateSlot] change a cluster's
// topology under a running program. The test harness (internal/redistest)
// and the benchmark (sluice bench) use it; it imports no test code, so
// binaries that start servers link none.
//
// The redis-server binary is taken from $REDIS_SERVER, else from $PATH. If it
// cannot be found, StartServer and StartCluster return [ErrNoRedis].
//
// If $SLUICE_TEST_REDIS_ADDR is set (host:port), StartServer does not start
// anything: it returns a Server pointing at that address, whose Close is a
// no-op and whose Restart fails. Callers must therefore not assume an empty
// database.
package redisproc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedis is returned when no redis-server binary can be found.
var ErrNoRedis = errors.New("redis-server not found: install it (apt-get install redis-server) or set REDIS_SERVER")

// EnvRedisServer names the environment variable that overrides the
// redis-server binary (a path, or a name looked up in $PATH).
const EnvRedisServer = "REDIS_SERVER"

// EnvExternalAddr names the environment variable that makes StartServer use
// an already running Redis at the given host:port instead of starting one.
const EnvExternalAddr = "SLUICE_TEST_REDIS_ADDR"

const (
	startTimeout  = 10 * time.Second // until PING answers
	stopTimeout   = 5 * time.Second  // SIGTERM grace period before SIGKILL
	pollInterval  = 20 * time.Millisecond
	bindAttempts  = 5
	logTailLines  = 30
	logFileName   = "redis.log"
	addrInUseText = "Address already in use"
)

// Option configures StartServer.
type Option func(*config)

type config struct {
	appendOnly bool
	extraArgs  []string
	// bindPorts is called on every start attempt of a fresh server and
	// returns extra arguments that need their own free ports (for example
	// the cluster bus port). Retried together with the main port.
	bindPorts func() ([]string, error)
	replicas  int // per master, StartCluster only
	// sentinel, when set, is the configuration of a Sentinel (StartSentinel):
	// the server runs in Sentinel mode from a file holding it.
	sentinel string
}

// WithAppendOnly turns on AOF persistence with fsync on every write
// (--appendonly yes --appendfsync always), so data survives Restart.
func WithAppendOnly() Option {
	return func(c *config) { c.appendOnly = true }
}

// WithArgs appends extra redis-server command line arguments, e.g.
// WithArgs("--maxmemory", "10mb").
func WithArgs(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

// Server is a redis-server process started by StartServer (or an external
// server, see EnvExternalAddr).
type Server struct {
	addr     string
	port     int
	external bool

	bin  string
	dir  string
	args []string // full argument list, including --port

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has been waited for
	logFile *os.File
	closed  bool
}

// StartServer starts a redis-server on a free 127.0.0.1 port with
// persistence off (unless WithAppendOnly), and waits until it answers PING.
func StartServer(opts ...Option) (*Server, error) {
	if ext := os.Getenv(EnvExternalAddr); ext != "" {
		return externalServer(ext)
	}
	return startServer(opts...)
}

func startServer(opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	bin, err := findRedisServer()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-*")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{bin: bin, dir: dir}
	if cfg.sentinel != "" {
		// Sentinel rewrites its file as it learns the topology
		if err := os.WriteFile(filepath.Join(dir, sentinelConfFile), []byte(cfg.sentinel), 0o644); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}

	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		var portArgs []string
		if cfg.bindPorts != nil {
			if portArgs, err = cfg.bindPorts(); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
		s.port = port
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		s.args = serverArgs(port, dir, &cfg, portArgs)

		err = s.start()
		if err == nil {
			return s, nil
		}
		if attempt < bindAttempts && errors.Is(err, errAddrInUse) {
			continue
		}
		os.RemoveAll(dir)
		return nil, err
	}
}

func serverArgs(port int, dir string, cfg *config, portArgs []string) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
	}
	if cfg.appendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, portArgs...)
	args = append(args, cfg.extraArgs...)
	if cfg.sentinel != "" {
		// the configuration file must come first
		args = append(append([]string{filepath.Join(dir, sentinelConfFile)}, args...), "--sentinel")
	}
	return args
}

func externalServer(addr string) (*Server, error) {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("redistest: %s=%q: %w", EnvExternalAddr, addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("redistest: %s=%q: bad port", EnvExternalAddr, addr)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		perr := ping(addr)
		if perr == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("redistest: %s=%q does not answer PING: %w", EnvExternalAddr, addr, perr)
		}
		time.Sleep(pollInterval)
	}
	return &Server{addr: addr, port: port, external: true}, nil
}

// findRedisServer locates the redis-server binary.
func findRedisServer() (string, error) {
	if env := os.Getenv(EnvRedisServer); env != "" {
		p, err := exec.LookPath(env)
		if err != nil {
			return "", fmt.Errorf("%w (%s=%q is not an executable)", ErrNoRedis, EnvRedisServer, env)
		}
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoRedis
	}
	return p, nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// released before returning, so a later bind can still race with someone
// else; callers retry on "Address already in use".
func freePort() (int, error) {
	var lastErr error
	for range bindAttempts {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			lastErr = err
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free port: %w", lastErr)
}

var errAddrInUse = errors.New("address already in use")

// start launches the process with s.args and waits for PING.
// The caller must hold s.mu or otherwise own s exclusively.
func (s *Server) start() error {
	logPath := filepath.Join(s.dir, logFileName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redistest: %w", err)
	}
	fmt.Fprintf(logFile, "=== redistest: starting %s %s\n", s.bin, strings.Join(quoteArgs(s.args), " "))

	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()

	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for {
		select {
		case <-done:
			logFile.Close()
			tail := s.logTail()
			err := fmt.Errorf("redistest: redis-server on %s exited during startup (%s)\n--- last lines of %s ---\n%s",
				s.addr, cmd.ProcessState, logPath, tail)
			if strings.Contains(tail, addrInUseText) {
				return fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		default:
		}
		pid, perr := probe(s.addr, true)
		if perr == nil && pid != cmd.Process.Pid {
			perr = fmt.Errorf("port taken by another redis-server (pid %d)", pid)
		}
		if lastErr = perr; perr == nil {
			s.cmd, s.done, s.logFile = cmd, done, logFile
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			logFile.Close()
			return fmt.Errorf("redistest: redis-server on %s did not answer PING within %s (last error: %v)\n--- last lines of %s ---\n%s",
				s.addr, startTimeout, lastErr, logPath, s.logTail())
		}
		time.Sleep(pollInterval)
	}
}

// stop terminates the process: SIGTERM, then SIGKILL after stopTimeout.
// The caller must hold s.mu.
func (s *Server) stop() error {
	if s.cmd == nil {
		return nil
	}
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	defer func() {
		s.logFile.Close()
		s.logFile = nil
	}()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		// Already exited (and reaped by our Wait goroutine).
		<-done
		return nil
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C:
	}
	cmd.Process.Kill()
	<-done
	return fmt.Errorf("redistest: redis-server on %s ignored SIGTERM for %s and was killed", s.addr, stopTimeout)
}

// Kill stops the server with SIGKILL, as a crash would: no shutdown save,
// clients see their connections drop. It stays down until Restart.
func (s *Server) Kill() error {
	if s.external {
		return fmt.Errorf("redistest: cannot kill external server %s (%s)", s.addr, EnvExternalAddr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("redistest: kill of stopped server %s", s.addr)
	}
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	_ = cmd.Process.Kill()
	<-done
	s.logFile.Close()
	s.logFile = nil
	return nil
}

// Close stops the server (SIGTERM, SIGKILL after 5s) and removes its
// directory. It is safe to call more than once. For an external server
// (SLUICE_TEST_REDIS_ADDR) it does nothing.
func (s *Server) Close() error {
	if s.external {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stop()
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("redistest: %w", rerr)
	}
	return err
}

// Restart stops the server and starts it again on the same port, with the
// same directory and arguments. With WithAppendOnly, written data survives.
// Clients reconnect on their own (go-redis retries on broken connections).
func (s *Server) Restart() error {
	if s.external {
		return fmt.Errorf("redistest: cannot restart external server %s (%s)", s.addr, EnvExternalAddr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("redistest: restart of closed server %s", s.addr)
	}
	if err := s.stop(); err != nil {
		return err
	}
	var err error
	for range bindAttempts {
		// The port can only be in use if something grabbed it in the gap.
		if err = s.start(); err == nil || !errors.Is(err, errAddrInUse) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Addr returns the server address as "127.0.0.1:port".
func (s *Server) Addr() string { return s.addr }

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory (holding its AOF files and
// redis.log), or "" for an external server.
func (s *Server) Dir() string { return s.dir }

// busPort returns the --cluster-port argument, or 0.
func (s *Server) busPort() int {
	for i := 0; i+1 < len(s.args); i++ {
		if s.args[i] == "--cluster-port" {
			p, _ := strconv.Atoi(s.args[i+1])
			return p
		}
	}
	return 0
}

// Client returns a new go-redis client for the server. The caller owns it
// and must Close it.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.addr})
}

// logTail returns the last lines of the server log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, logFileName))
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// ping sends PING and expects +PONG (a server still loading its AOF answers
// -LOADING, which counts as not ready).
func ping(addr string) error {
	_, err := probe(addr, false)
	return err
}

// probe checks that addr answers PING with +PONG and, if wantPID, returns
// the process_id from INFO server, so that start can make sure the server
// answering is the process it launched and not another one that grabbed the
// port in the meantime.
func probe(addr string, wantPID bool) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	req := "*1\r\n$4\r\nPING\r\n"
	if wantPID {
		req += "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
	}
	if _, err := conn.Write([]byte(req)); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return 0, fmt.Errorf("PING answered %q", line)
	}
	if !wantPID {
		return 0, nil
	}
	// INFO reply: $<len>\r\n<payload>\r\n (RESP2, as we never sent HELLO).
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(head), "$"))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO answered %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}
