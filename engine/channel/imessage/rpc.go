package imessage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of the JSON-RPC stream.
const (
	// maxLine bounds one stdout line (one JSON-RPC message). A message
	// notification carries one message's text and attachment metadata;
	// 8 MiB is far above that, and a longer line is skipped, not buffered.
	maxLine = 8 << 20
	// maxQueue bounds notifications waiting for Run (Deliver is slow when
	// the gateway is busy). imsg's own per-subscription buffer defaults to
	// 256; past ours the connection is dropped and Run resumes from its
	// cursor, so nothing is lost.
	maxQueue = 4096
	// stderrLineMax and stderrTail bound what is kept of imsg's stderr.
	stderrLineMax = 512
	stderrTail    = 8
	// stopGrace is how long a child gets to exit after its stdin closed
	// (imsg exits cleanly on EOF) before it is killed.
	stopGrace = 3 * time.Second
)

// JSON-RPC error codes imsg documents (docs/rpc.md).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeServerBusy     = -32000
	codeMaybeDelivered = -32001 // the operation may have completed or is in flight
	codeDBUnavailable  = -32002
	codeBridgeMissing  = -32003
	codeLanePoisoned   = -32004
)

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	msg := fmt.Sprintf("imsg error %d: %s", e.Code, e.Message)
	if d := e.delivery(); d.Disposition != "" {
		msg += " (" + d.Disposition + ")"
	}
	return msg
}

// deliveryData is the object imsg puts in error.data for delivery failures
// (-32001, -32004): retry_safe, disposition, transport, operation, detail.
type deliveryData struct {
	RetrySafe   *bool  `json:"retry_safe"`
	Disposition string `json:"disposition"`
}

func (e *rpcError) delivery() deliveryData {
	var d deliveryData
	if len(e.Data) > 0 && e.Data[0] == '{' {
		_ = json.Unmarshal(e.Data, &d) // data is a string for other errors; an unreadable object reads as no disposition
	}
	return d
}

// wireMsg is any line imsg writes: a response (id and result or error) or
// a notification (method and params, no id).
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// errClosed: the imsg process is gone.
var errClosed = errors.New("imsg rpc is not running")

// rpcConn is one running `imsg rpc` child and the JSON-RPC client on its
// stdin/stdout.
type rpcConn struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *slog.Logger

	wmu sync.Mutex // one line at a time on stdin

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan *wireMsg
	queue   []*wireMsg
	stderr  []string
	err     error // why the connection ended, once done is closed
	qsig    chan struct{}
	done    chan struct{}
}

// startRPC starts name args… with its stdio as a JSON-RPC stream. When ctx
// is cancelled, stdin is closed (imsg exits on EOF) and the child is
// killed if it has not exited stopGrace later.
func startRPC(ctx context.Context, log *slog.Logger, name string, args ...string) (*rpcConn, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("imsg stdin: %w", err)
	}
	// Our own pipes rather than StdoutPipe: Wait does not close our read
	// ends, so the reader can drain what the child wrote before it exited,
	// and a grandchild that keeps the pipe open (an ssh ControlMaster, a
	// wrapper script) cannot hang us: see wait below.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("imsg stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("imsg stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.Cancel = func() error { return stdin.Close() }
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	outW.Close()
	errW.Close()
	c := &rpcConn{
		cmd: cmd, stdin: stdin, log: log,
		pending: map[int64]chan *wireMsg{},
		qsig:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(outDone)
		if err := readLines(outR, maxLine, c.handleLine, func(n int) {
			c.log.Warn("imsg: skipped an overlong stdout line", "bytes", n)
		}); err != nil && !errors.Is(err, os.ErrClosed) {
			c.log.Warn("imsg: reading stdout", "err", err)
		}
	}()
	go func() {
		defer close(errDone)
		_ = readLines(errR, stderrLineMax, c.handleStderr, func(int) {
			c.handleStderr([]byte("(overlong line skipped)"))
		})
	}()
	go func() {
		werr := cmd.Wait()
		// The child is gone; give the readers a moment to reach EOF, then
		// close our read ends in case something else holds the pipes open.
		for _, p := range []struct {
			done <-chan struct{}
			f    *os.File
		}{{outDone, outR}, {errDone, errR}} {
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
				p.f.Close()
				<-p.done
			}
		}
		outR.Close()
		errR.Close()
		c.finish(werr)
	}()
	return c, nil
}

// finish records why the connection ended and fails pending calls.
func (c *rpcConn) finish(werr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		msg := "imsg rpc exited"
		if werr != nil {
			msg += ": " + werr.Error()
		}
		if len(c.stderr) > 0 {
			msg += "; stderr: " + strings.Join(c.stderr, " | ")
		}
		c.err = errors.New(msg)
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	close(c.done)
}

// fail ends the connection for reason (a protocol violation or an
// overflowing queue): the child is killed and Run sees done.
func (c *rpcConn) fail(reason error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = reason
	}
	c.mu.Unlock()
	c.stdin.Close()
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill() // best effort: the process may have exited already
	}
}

// Err is why the connection ended (nil while it runs).
func (c *rpcConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Done is closed when the child has exited and its output is read.
func (c *rpcConn) Done() <-chan struct{} { return c.done }

// close stops the child: stdin closed, then killed after stopGrace.

func (c *rpcConn) handleStderr(line []byte) {
	s := strings.TrimSpace(sanitize(string(line), stderrLineMax))
	if s == "" {
		return
	}
	c.log.Info("imsg stderr", "line", s)
	c.mu.Lock()
	c.stderr = append(c.stderr, s)
	if len(c.stderr) > stderrTail {
		c.stderr = c.stderr[len(c.stderr)-stderrTail:]
	}
	c.mu.Unlock()
}

func (c *rpcConn) handleLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var m wireMsg
	if err := json.Unmarshal(line, &m); err != nil {
		// imsg keeps stdout JSON-only; anything else is logged (bounded)
		// and ignored rather than ending the link.
		c.log.Warn("imsg: non-JSON line on stdout", "line", sanitize(string(line), 200), "err", err)
		return
	}
	if len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null")) && m.Method == "" {
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			c.log.Warn("imsg: response with an id we never sent", "id", sanitize(string(m.ID), 40))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ok {
			ch <- &m
		}
		return
	}
	if m.Method == "" {
		// A response with a null id: imsg could not read one of our
		// requests. Its caller times out; log why.
		if m.Error != nil {
			c.log.Warn("imsg: error without a request id", "err", m.Error.Error())
		}
		return
	}
	c.mu.Lock()
	if len(c.queue) >= maxQueue {
		c.mu.Unlock()
		c.fail(fmt.Errorf("more than %d imsg notifications waiting; reconnecting from the cursor", maxQueue))
		return
	}
	c.queue = append(c.queue, &m)
	c.mu.Unlock()
	select {
	case c.qsig <- struct{}{}:
	default:
	}
}

// next returns the oldest queued notification, if any.
func (c *rpcConn) next() (*wireMsg, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return nil, false
	}
	m := c.queue[0]
	c.queue[0] = nil
	c.queue = c.queue[1:]
	return m, true
}

// queued is the number of notifications waiting.
func (c *rpcConn) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// call sends one request and waits for its response; result, if non-nil,
// receives the result. A JSON-RPC error is returned as *rpcError.
func (c *rpcConn) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	select {
	case <-c.done:
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%w: %v", errClosed, err)
	default:
	}
	c.nextID++
	id := c.nextID
	ch := make(chan *wireMsg, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	req := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params}
	if params == nil {
		req.Params = struct{}{}
	}
	line, err := json.Marshal(req)
	if err != nil {
		c.forget(id)
		return fmt.Errorf("imsg %s: encode request: %w", method, err)
	}
	line = append(line, '\n')
	c.wmu.Lock()
	_, err = c.stdin.Write(line)
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		return fmt.Errorf("%w: imsg %s: write: %v", errClosed, method, err)
	}
	select {
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("imsg %s: %w", method, ctx.Err())
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%w: imsg %s: %v", errClosed, method, c.Err())
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			if len(m.Result) == 0 {
				return fmt.Errorf("imsg %s: response has no result", method)
			}
			if err := json.Unmarshal(m.Result, result); err != nil {
				return fmt.Errorf("imsg %s: decode result: %w", method, err)
			}
		}
		return nil
	}
}

func (c *rpcConn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// readLines calls fn with each line of r (without the newline). Lines longer
// than max are skipped (skipped is told their length) without buffering
// them. It returns nil at EOF.
func readLines(r io.Reader, max int, fn func([]byte), skipped func(int)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	over := 0 // bytes of an overlong line seen so far; 0: not skipping
	for {
		chunk, err := br.ReadSlice('\n')
		end := err == nil || (err != bufio.ErrBufferFull && (len(chunk) > 0 || len(buf) > 0 || over > 0))
		if over == 0 && len(buf)+len(chunk) <= max+1 {
			buf = append(buf, chunk...)
		} else {
			over += len(buf) + len(chunk)
			buf = buf[:0]
		}
		if end {
			if over > 0 {
				skipped(over)
				over = 0
			} else if len(buf) > 0 {
				fn(bytes.TrimSuffix(buf, []byte{'\n'}))
			}
			buf = buf[:0]
		}
		switch {
		case err == nil, err == bufio.ErrBufferFull:
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// sanitize bounds s to n bytes and replaces control characters, for logs
// and owner-visible reasons.
func sanitize(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
