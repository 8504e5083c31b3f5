package imessage

// A fake `imsg rpc` speaking the protocol as openclaw/imsg docs/rpc.md
// documents it: JSON-RPC 2.0, one object per line; named params only;
// unknown keys and wrong types rejected with -32602; watch.subscribe with
// since_rowid semantics (positive: exclusive resume; omitted/0: current
// tail; -1: everything) emitting `message` notifications after the
// subscribe response; send to exactly one of to/chat_id/chat_identifier/
// chat_guid with text and/or file.
//
// The test binary becomes the fake when FAKE_IMSG_DIR is set (TestMain);
// a wrapper script named imsg execs it. Its "Messages database" is
// FAKE_IMSG_DIR/db.jsonl, one Message object per line (id = rowid), which
// tests append to; it records argv, requests and sends in that directory.

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
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("FAKE_IMSG_DIR"); dir != "" {
		os.Exit(runFakeIMsg(dir))
	}
	os.Exit(m.Run())
}

// fakeConfig is FAKE_IMSG_DIR/config.json.
type fakeConfig struct {
	Tracked      bool      `json:"tracked"`      // advertise and serve send.tracked
	DBNotReady   bool      `json:"dbNotReady"`   // initialize reports database.ready false
	NoInitialize bool      `json:"noInitialize"` // an old imsg: initialize is an unknown method
	SendError    *rpcError `json:"sendError"`    // every send fails with this
}

type fake struct {
	dir string
	cfg fakeConfig
	wmu sync.Mutex
	out *bufio.Writer
	mu  sync.Mutex
	n   int64 // subscriptions and send rowids
}

func runFakeIMsg(dir string) int {
	f := &fake{dir: dir, out: bufio.NewWriter(os.Stdout)}
	if b, err := os.ReadFile(filepath.Join(dir, "config.json")); err == nil {
		if err := json.Unmarshal(b, &f.cfg); err != nil {
			fmt.Fprintln(os.Stderr, "fake imsg: bad config:", err)
			return 2
		}
	}
	f.appendLine("argv.jsonl", os.Args[1:])
	os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
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
	return 0
}

func (f *fake) appendLine(name string, v any) {
	b, _ := json.Marshal(v)
	f.appendRaw(name, b)
}

func (f *fake) appendRaw(name string, b []byte) {
	fh, err := os.OpenFile(filepath.Join(f.dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	fh.Write(append(append([]byte{}, b...), '\n'))
	fh.Close()
}

func (f *fake) write(v any) {
	b, _ := json.Marshal(v)
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.out.Write(b)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *fake) respond(id json.RawMessage, result any) {
	f.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (f *fake) fail(id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	f.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// paramSpec: key → int | posint | bool | string | strings.
type paramSpec map[string]string

var sendSpec = paramSpec{"to": "string", "text": "string", "file": "string", "service": "string", "region": "string",
	"allow_sms_fallback": "bool", "chat_id": "int", "chat_identifier": "string", "chat_guid": "string", "transport": "string"}

func (f *fake) handle(line []byte) {
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
		if since == 0 {
			since = f.maxRowid()
		}
		attachments := string(params["attachments"]) == "true"
		f.mu.Lock()
		f.n++
		sub := f.n
		f.mu.Unlock()
		f.respond(id, map[string]any{"subscription": sub, "buffer_limit": 256})
		go f.watch(sub, since, attachments)
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

func (f *fake) send(id json.RawMessage, method string, params map[string]json.RawMessage) {
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
		if !uuidRE.MatchString(str("attempt_id")) || str("file") != "" || str("text") == "" {
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

func (f *fake) trackedSent(guid string) bool {
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

// dbMessages reads the fake database: complete lines only.
func (f *fake) dbMessages() []map[string]any {
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

func (f *fake) maxRowid() int64 {
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

func (f *fake) watch(sub, since int64, attachments bool) {
	for {
		for _, m := range f.dbMessages() {
			if rowid(m) <= since {
				continue
			}
			since = rowid(m)
			if _, ok := m["cursor"]; !ok {
				m["cursor"] = rowid(m)
			}
			if !attachments {
				m["attachments"] = []any{}
			}
			f.write(map[string]any{"jsonrpc": "2.0", "method": "message", "params": map[string]any{"subscription": sub, "message": m}})
		}
		time.Sleep(10 * time.Millisecond)
	}
}
