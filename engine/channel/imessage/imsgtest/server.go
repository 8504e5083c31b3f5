// Package imsgtest is a fake `imsg rpc` (openclaw/imsg) for tests of the
// iMessage adapter and of anything that runs it, the whole gateway
// included. It speaks the protocol as imsg's docs/rpc.md documents it:
// JSON-RPC 2.0, one object per line each way; named params only; unknown
// keys and wrong types rejected with -32602, as the real imsg does, so a
// caller that sends an undocumented key fails here instead of on a Mac;
// watch.subscribe with since_rowid semantics (positive: exclusive resume;
// omitted or 0: the current tail; -1: everything) emitting `message`
// notifications {subscription, message} after the subscribe response;
// send to exactly one of to/chat_id/chat_identifier/chat_guid with text
// and/or file; send.tracked and message.send_status when Config.Tracked.
//
// The fake is the test binary itself, re-executed: a test package calls
// Main first thing in its TestMain (or an init function), and New writes a
// wrapper script named imsg that runs the test binary with EnvDir set.
// Everything the fake reads and writes lives in that directory:
//
//   - db.jsonl: the "Messages database", one imsg Message object per line
//     (docs/json.md; id = rowid, ascending). Tests append with Fake.Add;
//     the fake watches it and turns each new row into a `message`
//     notification on every live subscription.
//   - sends.jsonl: every accepted send / send.tracked, its params plus
//     "method" (Fake.Sends).
//   - requests.jsonl, argv.jsonl, pid: every request line, each start's
//     arguments, the running fake's process id (Fake.Requests, Fake.Argv,
//     Fake.PID, Fake.Kill).
//   - config.json: the Config the fake was created with.
//
// Attachments are stored as chat.db has them (Attachment: filename
// "~/Library/Messages/Attachments/…", transfer_name, uti, mime_type,
// total_bytes, is_sticker) and, when a subscription asked for them, sent
// as imsg's RPC encoder sends them (Sources/imsg/OutputModels.swift
// AttachmentPayload): original_path resolved from filename against $HOME
// and missing from the file system, as imsg's AttachmentResolver does.
package imsgtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvDir names the environment variable that turns a re-executed test
// binary into the fake imsg serving that directory.
const EnvDir = "IMSGTEST_DIR"

// Main serves as the fake imsg and exits when EnvDir is set; otherwise it
// returns at once. Call it before anything else in TestMain (or from an
// init function of a _test.go file when TestMain belongs to someone else).
func Main() {
	if dir := os.Getenv(EnvDir); dir != "" {
		os.Exit(serve(dir))
	}
}

// Config is how the fake behaves (config.json in its directory).
type Config struct {
	// Tracked advertises and serves send.tracked (imsg's bridge).
	Tracked bool `json:"tracked"`
	// DBNotReady makes initialize report database.ready false (no Full
	// Disk Access).
	DBNotReady bool `json:"dbNotReady"`
	// NoInitialize plays an old imsg: initialize is an unknown method.
	NoInitialize bool `json:"noInitialize"`
	// SendError fails every send with this error.
	SendError *RPCError `json:"sendError"`
	// Redeliver re-sends, on a subscribe with since_rowid > 0, the last
	// Redeliver rows at or below since_rowid before the new ones: the
	// duplicates imsg's at-least-once watch is allowed to produce, which
	// a client must drop.
	Redeliver int `json:"redeliver"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// UUIDPattern matches the attempt_id send.tracked accepts.
var UUIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

type server struct {
	dir string
	cfg Config
	wmu sync.Mutex
	out *bufio.Writer
	mu  sync.Mutex
	n   int64 // subscriptions and send rowids
}

func serve(dir string) int {
	f := &server{dir: dir, out: bufio.NewWriter(os.Stdout)}
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		if err := json.Unmarshal(b, &f.cfg); err != nil {
			fmt.Fprintln(os.Stderr, "fake imsg: bad config:", err)
			return 2
		}
	}
	f.appendLine("argv.jsonl", os.Args[1:])
	// Written whole and renamed, so a test polling for a restart never
	// reads a half-written pid.
	tmp := filepath.Join(dir, ".pid."+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600); err == nil {
		_ = os.Rename(tmp, filepath.Join(dir, "pid"))
	}
	args := os.Args[1:]
	if !(len(args) == 1 && args[0] == "rpc") && !(len(args) == 3 && args[0] == "rpc" && args[1] == "--db" && args[2] != "") {
		fmt.Fprintln(os.Stderr, "Usage: imsg rpc [--db path]")
		return 64
	}
	fmt.Fprintln(os.Stderr, "fake imsg: ready")
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		f.appendRaw("requests.jsonl", line)
		f.handle(line)
	}
	return 0 // imsg exits cleanly when its stdin closes
}

func (f *server) appendLine(name string, v any) {
	b, _ := json.Marshal(v)
	f.appendRaw(name, b)
}

func (f *server) appendRaw(name string, b []byte) {
	fh, err := os.OpenFile(filepath.Join(f.dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	// One write of a whole line: readers never see half a record.
	if _, err := fh.Write(append(append([]byte{}, b...), '\n')); err != nil {
		panic(err)
	}
	fh.Close()
}

func (f *server) write(v any) {
	b, _ := json.Marshal(v)
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.out.Write(b)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *server) respond(id json.RawMessage, result any) {
	f.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (f *server) fail(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	f.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// paramSpec: key → int | posint | bool | string | strings.
type paramSpec map[string]string

var sendSpec = paramSpec{"to": "string", "text": "string", "file": "string", "service": "string", "region": "string",
	"allow_sms_fallback": "bool", "chat_id": "int", "chat_identifier": "string", "chat_guid": "string", "transport": "string"}

func (f *server) handle(line []byte) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(line, &req); err != nil {
		f.fail(nil, -32700, "parse error")
		return
	}
	id, hasID := req["id"]
	if string(req["jsonrpc"]) != `"2.0"` {
		f.fail(id, -32600, "invalid request: jsonrpc must be 2.0")
		return
	}
	var method string
	if err := json.Unmarshal(req["method"], &method); err != nil || method == "" {
		f.fail(id, -32600, "invalid request: method")
		return
	}
	for k := range req {
		if k != "jsonrpc" && k != "id" && k != "method" && k != "params" {
			f.fail(id, -32600, "invalid request: unknown member "+k)
			return
		}
	}
	if !hasID {
		return // notifications never get a response
	}
	params := map[string]json.RawMessage{}
	if raw, ok := req["params"]; ok {
		if len(raw) == 0 || raw[0] != '{' {
			f.fail(id, -32602, "invalid params: params must be an object")
			return
		}
		if err := json.Unmarshal(raw, &params); err != nil {
			f.fail(id, -32602, "invalid params")
			return
		}
	}
	var spec paramSpec
	switch method {
	case "initialize":
		if f.cfg.NoInitialize {
			f.fail(id, -32601, "method not found")
			return
		}
		spec = paramSpec{"protocol_version": "int"}
	case "status":
		spec = paramSpec{}
	case "chats.list":
		spec = paramSpec{"limit": "posint", "unread_only": "bool"}
	case "watch.subscribe":
		spec = paramSpec{"chat_id": "int", "since_rowid": "int", "participants": "strings", "start": "string", "end": "string",
			"attachments": "bool", "include_reactions": "bool", "debounce_ms": "int", "buffer_limit": "int"}
	case "watch.unsubscribe":
		spec = paramSpec{"subscription": "int"}
	case "send":
		spec = sendSpec
	case "send.tracked":
		if !f.cfg.Tracked {
			f.fail(id, -32003, "bridge not running")
			return
		}
		spec = paramSpec{"attempt_id": "string"}
		for k, v := range sendSpec {
			spec[k] = v
		}
	case "message.send_status":
		spec = paramSpec{"guid": "string"}
	default:
		f.fail(id, -32601, "method not found: "+method)
		return
	}
	if err := checkParams(params, spec); err != nil {
		f.fail(id, -32602, "invalid params: "+err.Error())
		return
	}
	switch method {
	case "initialize", "status":
		if v, ok := params["protocol_version"]; ok && string(v) != "1" {
			f.fail(id, -32602, "invalid params: unsupported protocol_version")
			return
		}
		methods := []string{"initialize", "status", "watch.unsubscribe", "chats.list", "watch.subscribe", "send", "message.send_status"}
		if f.cfg.Tracked {
			methods = append(methods, "send.tracked")
		}
		db := map[string]any{"path": "/Users/me/Library/Messages/chat.db", "ready": !f.cfg.DBNotReady}
		if f.cfg.DBNotReady {
			db["error"] = "Full Disk Access is required to read chat.db"
			methods = methods[:3]
		}
		f.respond(id, map[string]any{"version": "0.9.9-fake", "protocol_version": 1, "database": db, "methods": methods})
	case "chats.list":
		f.respond(id, map[string]any{"chats": []any{}})
	case "watch.subscribe":
		since := int64(0)
		if v, ok := params["since_rowid"]; ok {
			since, _ = strconv.ParseInt(string(v), 10, 64)
		}
		resume := since > 0
		if since == 0 {
			since = f.maxRowid()
		}
		attachments := string(params["attachments"]) == "true"
		f.mu.Lock()
		f.n++
		sub := f.n
		f.mu.Unlock()
		f.respond(id, map[string]any{"subscription": sub, "buffer_limit": 256})
		go f.watch(sub, since, resume, attachments)
	case "watch.unsubscribe":
		f.respond(id, map[string]any{"ok": true})
	case "send", "send.tracked":
		f.send(id, method, params)
	case "message.send_status":
		var guid string
		json.Unmarshal(params["guid"], &guid)
		if f.trackedSent(guid) {
			f.respond(id, map[string]any{"ok": true, "guid": guid, "send_state": "delivered", "status_fields": map[string]any{"is_sent": true}})
		} else {
			f.respond(id, map[string]any{"ok": true, "guid": guid, "send_state": "pending", "status_fields": nil})
		}
	}
}

func (f *server) send(id json.RawMessage, method string, params map[string]json.RawMessage) {
	str := func(k string) string {
		var s string
		json.Unmarshal(params[k], &s)
		return s
	}
	targets := 0
	for _, k := range []string{"to", "chat_id", "chat_identifier", "chat_guid"} {
		if _, ok := params[k]; ok {
			targets++
		}
	}
	if targets != 1 {
		f.fail(id, -32602, "invalid params: exactly one of to, chat_id, chat_identifier, chat_guid")
		return
	}
	if s := str("service"); s != "" && s != "imessage" && s != "sms" && s != "auto" {
		f.fail(id, -32602, "invalid service")
		return
	}
	if str("text") == "" && str("file") == "" {
		f.fail(id, -32602, "text or file is required")
		return
	}
	if file := str("file"); file != "" {
		if _, err := os.Stat(file); err != nil {
			f.fail(id, -32602, "file not found")
			return
		}
	}
	if method == "send.tracked" {
		if !UUIDPattern.MatchString(str("attempt_id")) || str("file") != "" || str("text") == "" {
			f.fail(id, -32602, "send.tracked supports exactly one text message with a UUID attempt_id")
			return
		}
		if f.trackedSent(strings.ToLower(str("attempt_id"))) {
			f.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32001, "message": "attempt_id already identifies a message",
				"data": map[string]any{"retry_safe": true, "disposition": "not_started"}}})
			return
		}
	}
	if e := f.cfg.SendError; e != nil {
		f.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
		return
	}
	rec := map[string]any{"method": method}
	for k, v := range params {
		rec[k] = v
	}
	f.appendLine("sends.jsonl", rec)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	guid := fmt.Sprintf("SENT-%d", n)
	if method == "send.tracked" {
		guid = strings.ToLower(str("attempt_id"))
		f.appendLine("tracked.jsonl", guid)
	}
	f.respond(id, map[string]any{"ok": true, "id": 1000 + n, "guid": guid})
}

func (f *server) trackedSent(guid string) bool {
	b, _ := os.ReadFile(filepath.Join(f.dir, "tracked.jsonl"))
	return bytes.Contains(b, []byte(`"`+guid+`"`))
}

// checkParams rejects unknown keys and wrong types, as imsg does.
func checkParams(params map[string]json.RawMessage, spec paramSpec) error {
	for k, v := range params {
		typ, ok := spec[k]
		if !ok {
			return fmt.Errorf("unknown key %q", k)
		}
		s := string(v)
		switch typ {
		case "int", "posint":
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("%s must be an integer", k)
			}
			if typ == "posint" && n <= 0 {
				return fmt.Errorf("%s must be positive", k)
			}
		case "bool":
			if s != "true" && s != "false" {
				return fmt.Errorf("%s must be a boolean", k)
			}
		case "string":
			var str string
			if json.Unmarshal(v, &str) != nil {
				return fmt.Errorf("%s must be a string", k)
			}
		case "strings":
			var ss []string
			if json.Unmarshal(v, &ss) != nil || s == "null" {
				return fmt.Errorf("%s must be an array of strings", k)
			}
		}
	}
	return nil
}

// dbMessages reads the fake database: complete lines only (a test may be
// appending).
func (f *server) dbMessages() []map[string]any {
	b, _ := os.ReadFile(filepath.Join(f.dir, "db.jsonl"))
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		return nil
	}
	var out []map[string]any
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
}

func rowid(m map[string]any) int64 { v, _ := m["id"].(float64); return int64(v) }

func (f *server) maxRowid() int64 {
	var max int64
	for _, m := range f.dbMessages() {
		max = maxInt(max, rowid(m))
	}
	return max
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// watch emits every row after since as a `message` notification, polling
// the database like imsg's file watcher; on a resume it first repeats up to
// Config.Redeliver rows at or below since.
func (f *server) watch(sub, since int64, resume, attachments bool) {
	emit := func(m map[string]any) {
		if _, ok := m["cursor"]; !ok {
			m["cursor"] = rowid(m)
		}
		if !attachments {
			m["attachments"] = []any{}
		} else {
			m["attachments"] = resolveAttachments(m["attachments"])
		}
		f.write(map[string]any{"jsonrpc": "2.0", "method": "message", "params": map[string]any{"subscription": sub, "message": m}})
	}
	if resume && f.cfg.Redeliver > 0 {
		var old []map[string]any
		for _, m := range f.dbMessages() {
			if rowid(m) <= since {
				old = append(old, m)
			}
		}
		for _, m := range old[max(0, len(old)-f.cfg.Redeliver):] {
			emit(m)
		}
	}
	for {
		for _, m := range f.dbMessages() {
			if rowid(m) <= since {
				continue
			}
			since = rowid(m)
			emit(m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resolveAttachments does what imsg's AttachmentResolver does for each
// attachment row: original_path is the row's filename with "~" expanded to
// the home directory of the user imsg runs as ($HOME), and missing is true
// unless that is an existing non-directory (symlinks followed, as
// FileManager.fileExists does). A row that already has original_path or
// path (a test playing an odd or hostile imsg, or docs/json.md's older
// form) is passed on as it is, missing computed only when absent.
func resolveAttachments(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	out := make([]any, 0, len(list))
	for _, a := range list {
		at, ok := a.(map[string]any)
		if !ok {
			out = append(out, a)
			continue
		}
		c := make(map[string]any, len(at)+2)
		for k, v := range at {
			c[k] = v
		}
		p, hasOrig := c["original_path"].(string)
		if _, hasPath := c["path"]; !hasOrig && !hasPath {
			p, _ = c["filename"].(string)
			if rest, ok := strings.CutPrefix(p, "~/"); ok {
				p = filepath.Join(os.Getenv("HOME"), rest)
			} else if p == "~" {
				p = os.Getenv("HOME")
			}
			c["original_path"] = p
		} else if hasPath && !hasOrig {
			p, _ = c["path"].(string)
		}
		if _, ok := c["missing"]; !ok {
			st, err := os.Stat(p)
			c["missing"] = p == "" || err != nil || st.IsDir()
		}
		out = append(out, c)
	}
	return out
}
